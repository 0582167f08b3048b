import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createHash, timingSafeEqual } from 'node:crypto';
import Koa, { type ParameterizedContext } from 'koa';
import Router from '@koa/router';
import { z } from 'zod';
import { createLogger, type Logger } from '../../src/logger';
import { currencyExponent, toMinor } from './money';
import {
  DISPUTE_FAULT_MODES,
  PAYMENT_FAULT_MODES,
  REFUND_FAULT_MODES,
  CardDeclinedError,
  SandboxError,
  SandboxStore,
  attachedCardJson,
  DEFAULT_RETENTION,
  UNKNOWN_DISPUTE_STATUS,
  UNKNOWN_PAYMENT_STATUS,
  UNKNOWN_REFUND_STATUS,
  ledgerEntryJson,
  paymentJson,
  refundJson,
  type Faults,
  type PaymentRecord,
  type RefundFaultMode,
  type SandboxRetention,
} from './state';
import { renderAuthenticationPage, renderCheckoutPage, renderMessagePage } from './checkoutPage';
import { WebhookSender, paymentWebhookType } from './webhooks';
import { SandboxDisputes, disputeJson, type DisputeChange } from './disputes';

export interface SandboxOptions {
  apiKey: string;
  webhookSecret: string;
  /** Base of the checkout URLs; the listening address `http://127.0.0.1:<port>` when absent. */
  publicBaseUrl?: string;
  /** When set, `/_admin/*` needs `Authorization: Bearer <adminToken>` (required in production). */
  adminToken?: string;
  /** How long a `tok_processing` charge stays `processing` (SANDBOX_PROCESSING_SECONDS, default 5). */
  processingSeconds?: number;
  log?: Logger;
  /** SANDBOX_DISPUTE_SECONDS: a `tok_dispute` capture is disputed this long after it (default 2). */
  disputeSeconds?: number;
  /** SANDBOX_DISPUTE_EVIDENCE_SECONDS: a dispute's evidence is due this long after it opens (default 604800). */
  disputeEvidenceSeconds?: number;
  /** What the sandbox keeps (SANDBOX_RETENTION_SECONDS, SANDBOX_MAX_LEDGER_ENTRIES; decision 0079). */
  retention?: Partial<SandboxRetention>;
}

export const DEFAULT_DISPUTE_SECONDS = 2;
export const DEFAULT_DISPUTE_EVIDENCE_SECONDS = 604_800;
/** setTimeout's longest delay; a longer one is armed again when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface RunningSandbox {
  url: string;
  close(): Promise<void>;
}

export interface Sandbox {
  app: Koa<SandboxCtxState>;
  store: SandboxStore;
  disputes: SandboxDisputes;
  listen(port: number, host?: string): Promise<RunningSandbox>;
}

interface SandboxCtxState {
  /** The refund fault mode as it was when this request arrived. */
  refundMode?: RefundFaultMode;
  /** Card charges declined (payments fault mode `decline`) when this request arrived. */
  declineCards?: boolean;
  /** Aborted when the client goes away before it got its answer. */
  clientGone?: AbortSignal;
}

type Ctx = ParameterizedContext<SandboxCtxState>;

/** `timeout` mode: the operation is performed, then the answer is held this long. */
export const TIMEOUT_HOLD_MS = 60_000;
const MAX_BODY_BYTES = 1024 * 1024;

// ---- request validation ----

const currencySchema = z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code in upper case');
const urlSchema = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
const metadataSchema = z
  .record(z.string().min(1).max(64), z.string().max(500))
  .refine((m) => Object.keys(m).length <= 100, 'at most 100 keys');

const createPaymentBody = z.strictObject({
  amount: z.number().nonnegative(),
  currency: currencySchema,
  mode: z.enum(['card', 'checkout', 'setup']),
  cardToken: z.string().min(1).max(255).nullish(),
  /** A charge without the customer (renewals, retries): `tok_3ds_offsession` then asks to authenticate. */
  offSession: z.boolean().nullish(),
  returnUrl: urlSchema.nullish(),
  webhookUrl: urlSchema.nullish(),
  saveCard: z.boolean().nullish(),
  description: z.string().max(1000).nullish(),
  metadata: metadataSchema.nullish(),
});

const attachCardBody = z.strictObject({
  cardToken: z.string().min(1).max(255),
  /** The caller's customer the card is kept for (any reference of the caller's). */
  customer: z.string().min(1).max(255),
  metadata: metadataSchema.nullish(),
});

const createRefundBody = z.strictObject({
  paymentId: z.string().min(1).max(255),
  amount: z.number().positive(),
  currency: currencySchema,
  reference_id: z.string().min(1).max(255),
  reason: z.string().max(1000).nullish(),
  webhookUrl: urlSchema.nullish(),
  metadata: metadataSchema.nullish(),
});

const faultsBody = z.strictObject({
  payments: z.enum(PAYMENT_FAULT_MODES).optional(),
  refunds: z.enum(REFUND_FAULT_MODES).optional(),
  disputes: z.enum(DISPUTE_FAULT_MODES).optional(),
  latencyMs: z.number().int().min(0).max(600_000).optional(),
});

const settleBody = z.strictObject({
  reference: z.string().min(1).max(255),
  status: z.enum(['succeeded', 'failed']),
  /** Names the refund when several payment transactions carry the reference. */
  paymentTransactionId: z.string().min(1).max(255).optional(),
});

const settlePaymentBody = z.strictObject({
  transactionId: z.string().min(1).max(255),
  status: z.enum(['succeeded', 'failed']),
});
const disputeEvidenceBody = z.strictObject({ text: z.string().min(1).max(20_000) });
const closeDisputeBody = z.strictObject({ status: z.enum(['won', 'lost']) });
const disputeLookupQuery = z.strictObject({ paymentId: z.string().min(1).max(255) });

const paymentLookupQuery = z.strictObject({ idempotencyKey: z.string().min(1).max(255) });
const refundLookupQuery = z
  .strictObject({
    idempotencyKey: z.string().min(1).max(255).optional(),
    reference_id: z.string().min(1).max(255).optional(),
    paymentId: z.string().min(1).max(255).optional(),
  })
  .refine(
    (q) => q.idempotencyKey !== undefined || q.reference_id !== undefined,
    'idempotencyKey or reference_id is required',
  );
const emptyBody = z.strictObject({}).optional();

function invalid(message: string): SandboxError {
  return new SandboxError(400, 'invalid_request', message);
}

function parse<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues
    .slice(0, 3)
    .map((i) => (i.path.length > 0 ? `${i.path.map(String).join('.')}: ${i.message}` : i.message));
  throw invalid(`Invalid ${where}: ${problems.join('; ')}`);
}

function minorAmount(amount: number, currency: string): number {
  const minor = toMinor(amount, currency);
  if (minor === undefined) {
    throw invalid(
      `amount: ${amount} is not a valid ${currency} amount (at most ${currencyExponent(currency)} decimals).`,
    );
  }
  return minor;
}

// ---- request bodies ----

function hasBody(ctx: Ctx): boolean {
  const length = ctx.req.headers['content-length'];
  if (length !== undefined) return Number(length) > 0;
  return ctx.req.headers['transfer-encoding'] !== undefined;
}

async function readText(ctx: Ctx): Promise<string> {
  if (Number(ctx.get('Content-Length') || 0) > MAX_BODY_BYTES) throw invalid('The body is over 1 MB.');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > MAX_BODY_BYTES) throw invalid('The body is over 1 MB.');
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The JSON body, or `undefined` when none was sent. */
async function readJson(ctx: Ctx): Promise<unknown> {
  if (!hasBody(ctx)) return undefined;
  if (!ctx.is('application/json', 'application/*+json')) throw invalid('Bodies must be application/json.');
  const text = await readText(ctx);
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalid('The body is not valid JSON.');
  }
}

// ---- answers ----

function renderError(ctx: Ctx, err: unknown, log: Logger): void {
  const known =
    err instanceof SandboxError ? err : new SandboxError(500, 'internal_error', 'Internal error in the sandbox.');
  if (!(err instanceof SandboxError)) log.error({ err }, 'unhandled error');
  ctx.status = known.status;
  ctx.body = {
    error: {
      code: known.code,
      message: known.message,
      ...(known instanceof CardDeclinedError ? { declineCode: known.declineCode } : {}),
    },
  };
}

/** `invalid` mode: status 200, a JSON content type, and a body cut in half (never parseable). */
function garble(ctx: Ctx): void {
  const text = typeof ctx.body === 'string' ? ctx.body : JSON.stringify(ctx.body ?? {});
  ctx.body = text.slice(0, Math.max(1, Math.floor(text.length / 2)));
  ctx.status = 200;
  ctx.type = 'application/json';
}

/**
 * `unknown_status` mode: every payment (payments fault), refund (refunds fault) or dispute (disputes
 * fault) answered, alone or in a list, has a status nobody knows.
 */
const UNKNOWN_STATUS_OF = {
  payments: ['payment', UNKNOWN_PAYMENT_STATUS],
  refunds: ['refund', UNKNOWN_REFUND_STATUS],
  disputes: ['dispute', UNKNOWN_DISPUTE_STATUS],
} as const;

function unknownStatus(ctx: Ctx, kind: keyof typeof UNKNOWN_STATUS_OF): void {
  if (ctx.status !== 200 || typeof ctx.body !== 'object' || ctx.body === null) return;
  const body = ctx.body as { object?: string; data?: Array<{ object?: string }> };
  const [object, status] = UNKNOWN_STATUS_OF[kind];
  const mark = (p: { object?: string }) => (p.object === object ? { ...p, status } : p);
  ctx.body = Array.isArray(body.data) ? { ...body, data: body.data.map(mark) } : mark(body);
}

/**
 * The fault state as answered: `disputes` (an addition of ours) only when set, so that the answer
 * stays `{ payments, refunds, latencyMs }` (PRODUCT.md) for callers that never use it.
 */
function faultsJson(faults: Faults): Partial<Faults> {
  const { disputes, ...rest } = faults;
  return disputes === 'ok' ? rest : { ...rest, disputes };
}

function wantsHtml(ctx: Ctx): boolean {
  return (
    Boolean(ctx.is('application/x-www-form-urlencoded', 'multipart/form-data')) ||
    ctx.get('Accept').toLowerCase().includes('text/html')
  );
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

function stripSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

export function createSandbox(opts: SandboxOptions): Sandbox {
  const log = opts.log ?? createLogger('silent', 'sandbox');
  // A disputed payment is kept whatever its age: its dispute still moves and refers to it.
  const disputedPayment = (paymentId: string): boolean =>
    [...disputes.disputes.values()].some((d) => d.paymentId === paymentId);
  const store = new SandboxStore({ ...DEFAULT_RETENTION, ...opts.retention }, disputedPayment);
  const disputes = new SandboxDisputes(store);
  const webhooks = new WebhookSender(opts.webhookSecret, log);
  const disputeSeconds = opts.disputeSeconds ?? DEFAULT_DISPUTE_SECONDS;
  const evidenceSeconds = opts.disputeEvidenceSeconds ?? DEFAULT_DISPUTE_EVIDENCE_SECONDS;
  const expectedKey = digest(`Bearer ${opts.apiKey}`);
  const processingMs = (opts.processingSeconds ?? 5) * 1000;
  // A `processing` charge's settlement, one timer per transaction (forgotten on reset and close).
  const processing = new Map<string, NodeJS.Timeout>();
  const settleNow = (id: string, status: 'succeeded' | 'failed'): PaymentRecord => {
    const timer = processing.get(id);
    if (timer) clearTimeout(timer);
    processing.delete(id);
    const payment = store.settleProcessing(id, status);
    webhooks.send(payment.webhookUrl, paymentWebhookType(status), paymentJson(payment));
    return payment;
  };
  const scheduleSettlement = (payment: PaymentRecord): void => {
    if (payment.status !== 'processing' || processing.has(payment.id)) return;
    const outcome = store.processingOutcome(payment);
    const timer = setTimeout(() => {
      processing.delete(payment.id);
      if (store.payments.get(payment.id) !== payment || payment.status !== 'processing') return;
      settleNow(payment.id, outcome);
      log.info({ transactionId: payment.id, status: outcome }, 'processing payment settled');
    }, processingMs);
    timer.unref();
    processing.set(payment.id, timer);
  };
  const forgetSettlements = (): void => {
    for (const timer of processing.values()) clearTimeout(timer);
    processing.clear();
  };
  const expectedAdmin = opts.adminToken === undefined ? undefined : digest(`Bearer ${opts.adminToken}`);
  let listeningUrl: string | undefined;

  // Every held answer (timeout mode, latency) is released at once on close().
  const sleepers = new Set<() => void>();
  const pause = (ms: number, until?: AbortSignal): Promise<void> =>
    new Promise((resolve) => {
      if (until?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        sleepers.delete(done);
        until?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      sleepers.add(done);
      until?.addEventListener('abort', done, { once: true });
    });

  // The processor's own clock: disputes opened after a capture, and their evidence deadlines.
  const timers = new Set<NodeJS.Timeout>();
  /** Payments whose dispute is scheduled already (a replayed create schedules nothing more). */
  const scheduled = new Set<string>();
  const later = (ms: number, run: () => void): void => {
    const timer = setTimeout(
      () => {
        timers.delete(timer);
        if (ms > MAX_TIMER_MS) later(ms - MAX_TIMER_MS, run);
        else run();
      },
      Math.min(ms, MAX_TIMER_MS),
    );
    timer.unref();
    timers.add(timer);
  };
  const cancelTimers = () => {
    for (const timer of timers) clearTimeout(timer);
    timers.clear();
  };
  /** A dispute's change, told by webhook (the disputes' `unknown_status` fault: with the status nobody knows). */
  const announce = (change: DisputeChange | null): void => {
    if (!change?.webhook) return;
    const json = disputeJson(change.record);
    const told = store.faults.disputes === 'unknown_status' ? { ...json, status: UNKNOWN_DISPUTE_STATUS } : json;
    webhooks.send(change.record.webhookUrl, change.webhook, told);
  };
  /** A captured `tok_dispute` payment: the dispute opens later, and is lost at its deadline if still unanswered. */
  const scheduleDispute = (payment: PaymentRecord): void => {
    if (!SandboxDisputes.disputes(payment) || disputes.ofPayment(payment.id).length > 0) return;
    later(disputeSeconds * 1000, () => {
      if (disputes.ofPayment(payment.id).length > 0) return;
      const opened = disputes.open(payment.id, evidenceSeconds);
      announce(opened);
      if (!opened) return;
      const due = Date.parse(opened.record.evidenceDueBy);
      // A timer may fire a little before the instant it was set for: the deadline is the dispute's.
      later(evidenceSeconds * 1000, () =>
        announce(disputes.expire(opened.record.id, new Date(Math.max(Date.now(), due)))),
      );
    });
  };

  const checkoutBase = (ctx: Ctx) => stripSlash(opts.publicBaseUrl ?? listeningUrl ?? ctx.origin);

  const authorized = (ctx: Ctx): boolean => {
    const given = ctx.get('Authorization');
    return given !== '' && timingSafeEqual(digest(given), expectedKey);
  };
  // Digests of equal length make the comparison constant-time whatever was sent.
  const adminAuthorized = (ctx: Ctx): boolean => {
    if (expectedAdmin === undefined) return true;
    const given = ctx.get('Authorization');
    return given !== '' && timingSafeEqual(digest(given), expectedAdmin);
  };

  const app = new Koa<SandboxCtxState>();
  app.silent = true;

  // Access log: method, path, status, timing. Never headers, never the query string.
  app.use(async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      log[ctx.status >= 500 ? 'error' : 'info'](
        { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10 },
        'request',
      );
    }
  });

  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      renderError(ctx, err, log);
    }
  });

  // The provider API: bearer auth, fault injection per kind, latency on every answer.
  app.use(async (ctx, next) => {
    if (!/^\/v1(\/|$)/.test(ctx.path)) return next();
    const receivedAt = new Date().toISOString();
    const faults: Faults = { ...store.faults };
    const gone = new AbortController();
    ctx.res.once('close', () => gone.abort());
    ctx.state.clientGone = gone.signal;
    ctx.state.refundMode = faults.refunds;
    ctx.state.declineCards = faults.payments === 'decline';
    try {
      if (!authorized(ctx)) {
        ctx.set('WWW-Authenticate', 'Bearer');
        throw new SandboxError(401, 'unauthorized', 'Missing or wrong API key (Authorization: Bearer <key>).');
      }
      // Cards attached to customers follow the payments' faults (a card verification is a card call).
      const kind = /^\/v1\/(payments|payment_methods)(\/|$)/.test(ctx.path)
        ? 'payments'
        : /^\/v1\/refunds(\/|$)/.test(ctx.path)
          ? 'refunds'
          : /^\/v1\/disputes(\/|$)/.test(ctx.path)
            ? 'disputes'
            : undefined;
      const mode = kind ? faults[kind] : 'ok';
      if (mode === 'unavailable') throw new SandboxError(503, 'unavailable', 'The provider is unavailable.');
      try {
        await next();
      } catch (err) {
        renderError(ctx, err, log);
      }
      if (mode === 'invalid') garble(ctx);
      else if (mode === 'unknown_status' && kind) unknownStatus(ctx, kind);
      else if (mode === 'timeout') await pause(TIMEOUT_HOLD_MS, gone.signal);
    } catch (err) {
      renderError(ctx, err, log);
    }
    if (faults.latencyMs > 0) await pause(faults.latencyMs, gone.signal);
    const key = ctx.get('idempotency-key');
    store.logRequest({
      method: ctx.method,
      url: ctx.url,
      idempotencyKey: key === '' ? null : key,
      status: ctx.status,
      receivedAt,
    });
  });

  const router = new Router<SandboxCtxState>();

  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });

  // ---- /v1/payments ----

  router.post('/v1/payments', async (ctx) => {
    const idempotencyKey = ctx.get('Idempotency-Key');
    if (idempotencyKey.length < 1 || idempotencyKey.length > 255) {
      throw invalid('The Idempotency-Key header is required (1 to 255 characters).');
    }
    const body = parse(createPaymentBody, await readJson(ctx), 'body');
    const amountMinor = minorAmount(body.amount, body.currency);
    if (body.mode === 'card' && !body.cardToken) throw invalid('cardToken: required when mode is "card".');
    if (body.mode === 'checkout' && body.cardToken) throw invalid('cardToken: only for mode "card" or "setup".');
    if (body.mode !== 'setup' && amountMinor === 0) throw invalid('amount: must be greater than 0.');
    // From here to the answer nothing awaits: lookup and insert of the key are atomic.
    const payment = store.createPayment(
      {
        idempotencyKey,
        amountMinor,
        currency: body.currency,
        mode: body.mode,
        cardToken: body.cardToken ?? null,
        offSession: body.offSession ?? false,
        returnUrl: body.returnUrl ?? null,
        webhookUrl: body.webhookUrl ?? null,
        saveCard: body.saveCard ?? false,
        description: body.description ?? null,
        metadata: body.metadata ?? {},
      },
      checkoutBase(ctx),
      ctx.state.declineCards,
    );
    scheduleSettlement(payment);
    if (SandboxDisputes.disputes(payment) && !scheduled.has(payment.id)) {
      scheduled.add(payment.id);
      scheduleDispute(payment);
    }
    ctx.body = paymentJson(payment);
  });

  router.get('/v1/payments', (ctx) => {
    const { idempotencyKey } = parse(paymentLookupQuery, { ...ctx.query }, 'query');
    const payment = store.paymentsByKey.get(idempotencyKey);
    ctx.body = { data: payment ? [paymentJson(payment)] : [] };
  });

  router.get('/v1/payments/:id', (ctx) => {
    ctx.body = paymentJson(store.getPayment(ctx.params.id ?? ''));
  });

  router.post('/v1/payments/:id/cancel', async (ctx) => {
    parse(emptyBody, await readJson(ctx), 'body');
    const { record, changed } = store.cancelPayment(ctx.params.id ?? '');
    if (changed) webhooks.send(record.webhookUrl, 'payment.canceled', paymentJson(record));
    ctx.body = paymentJson(record);
  });

  // ---- /v1/payment_methods (cards kept for customers) ----

  router.post('/v1/payment_methods', async (ctx) => {
    const idempotencyKey = ctx.get('Idempotency-Key');
    if (idempotencyKey.length < 1 || idempotencyKey.length > 255) {
      throw invalid('The Idempotency-Key header is required (1 to 255 characters).');
    }
    const body = parse(attachCardBody, await readJson(ctx), 'body');
    if (ctx.state.declineCards) throw new CardDeclinedError('card_declined', 'The card was declined.');
    const attached = store.attachCard({
      idempotencyKey,
      cardToken: body.cardToken,
      customer: body.customer,
      metadata: body.metadata ?? {},
    });
    ctx.body = attachedCardJson(attached);
  });

  router.post('/v1/payment_methods/:id/detach', async (ctx) => {
    parse(emptyBody, await readJson(ctx), 'body');
    ctx.body = attachedCardJson(store.detachCard(ctx.params.id ?? ''));
  });

  // ---- /v1/refunds ----

  router.post('/v1/refunds', async (ctx) => {
    // Optional (a hand-made call may omit it); our adapter always sends its refund id.
    const idempotencyKey = ctx.get('Idempotency-Key');
    if (idempotencyKey.length > 255) throw invalid('The Idempotency-Key header is at most 255 characters.');
    const body = parse(createRefundBody, await readJson(ctx), 'body');
    const amountMinor = minorAmount(body.amount, body.currency);
    // A replay (same key, or same reference on this transaction) is answered as before; a new
    // refund is refused while the payment is disputed (checked in the same tick as the insert).
    const known =
      (idempotencyKey !== '' && store.refundsByKey.has(idempotencyKey)) ||
      store.findRefund({ referenceId: body.reference_id, paymentId: body.paymentId }).length > 0;
    if (!known) disputes.checkRefund(body.paymentId, amountMinor);
    const refund = store.createRefund(
      {
        paymentId: body.paymentId,
        amountMinor,
        currency: body.currency,
        referenceId: body.reference_id,
        idempotencyKey: idempotencyKey === '' ? null : idempotencyKey,
        reason: body.reason ?? null,
        webhookUrl: body.webhookUrl ?? null,
        metadata: body.metadata ?? {},
      },
      ctx.state.refundMode ?? 'ok',
    );
    ctx.body = refundJson(refund);
  });

  router.get('/v1/refunds', (ctx) => {
    const q = parse(refundLookupQuery, { ...ctx.query }, 'query');
    const refunds = store.findRefund({
      idempotencyKey: q.idempotencyKey,
      referenceId: q.reference_id,
      paymentId: q.paymentId,
    });
    ctx.body = { data: refunds.map(refundJson) };
  });

  router.get('/v1/refunds/:id', (ctx) => {
    ctx.body = refundJson(store.getRefund(ctx.params.id ?? ''));
  });

  // ---- /v1/disputes ----

  router.get('/v1/disputes', (ctx) => {
    const { paymentId } = parse(disputeLookupQuery, { ...ctx.query }, 'query');
    ctx.body = { data: disputes.ofPayment(paymentId).map(disputeJson) };
  });

  router.get('/v1/disputes/:id', (ctx) => {
    ctx.body = disputeJson(disputes.get(ctx.params.id ?? ''));
  });

  router.post('/v1/disputes/:id/evidence', async (ctx) => {
    const body = parse(disputeEvidenceBody, await readJson(ctx), 'body');
    const change = disputes.submitEvidence(ctx.params.id ?? '', body.text);
    announce(change);
    ctx.body = disputeJson(change.record);
  });

  router.post('/v1/disputes/:id/accept', async (ctx) => {
    parse(emptyBody, await readJson(ctx), 'body');
    const change = disputes.accept(ctx.params.id ?? '');
    announce(change);
    ctx.body = disputeJson(change.record);
  });

  // ---- the hosted checkout page ----

  const htmlError = (ctx: Ctx, err: unknown): boolean => {
    if (!(err instanceof SandboxError) || (err.status !== 404 && err.status !== 410)) return false;
    ctx.status = err.status;
    ctx.type = 'text/html';
    ctx.body = renderMessagePage(err.status === 404 ? 'Not found' : 'Payment canceled', err.message);
    return true;
  };

  router.get('/checkout/:id', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    const payment = store.payments.get(ctx.params.id ?? '');
    try {
      if (!payment || payment.mode === 'card') throw new SandboxError(404, 'not_found', 'No such checkout.');
      if (payment.status === 'canceled') throw new SandboxError(410, 'payment_canceled', 'This payment was canceled.');
    } catch (err) {
      if (htmlError(ctx, err)) return;
      throw err;
    }
    ctx.type = 'text/html';
    ctx.body = renderCheckoutPage(payment);
  });

  const act = (action: 'pay' | 'decline') => async (ctx: Ctx) => {
    const html = wantsHtml(ctx);
    await readText(ctx); // a form's fields, or nothing: the outcome is the button pressed
    let payment: PaymentRecord;
    try {
      const { record, changed } = store.checkoutAct(ctx.params.id ?? '', action);
      payment = record;
      if (changed) {
        const type = record.status === 'succeeded' ? 'payment.succeeded' : 'payment.failed';
        webhooks.send(record.webhookUrl, type, paymentJson(record));
      }
    } catch (err) {
      if (html && htmlError(ctx, err)) return;
      throw err;
    }
    if (html && payment.returnUrl) {
      ctx.status = 303;
      ctx.set('Location', payment.returnUrl);
      ctx.body = { redirect: payment.returnUrl };
      return;
    }
    ctx.body = paymentJson(payment);
  };
  router.post('/checkout/:id/pay', act('pay'));
  router.post('/checkout/:id/decline', act('decline'));

  // ---- the authentication (3-D Secure) page of a `requires_action` charge ----

  /** A page that may no longer be acted on: 404 unknown, 409 settled, 410 cancelled (HTML for a browser). */
  const authenticationRefused = (ctx: Ctx, err: unknown, html: boolean): boolean => {
    if (!html || !(err instanceof SandboxError) || ![404, 409, 410].includes(err.status)) return false;
    ctx.status = err.status;
    ctx.type = 'text/html';
    const title = err.status === 404 ? 'Not found' : err.status === 410 ? 'Payment canceled' : 'Nothing to confirm';
    ctx.body = renderMessagePage(title, err.message);
    return true;
  };

  router.get('/authenticate/:id', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    let payment: PaymentRecord;
    try {
      payment = store.authenticationOf(ctx.params.id ?? '');
    } catch (err) {
      if (authenticationRefused(ctx, err, true)) return;
      throw err;
    }
    ctx.type = 'text/html';
    ctx.body = renderAuthenticationPage(payment);
  });

  const authenticate = (action: 'authenticate' | 'fail') => async (ctx: Ctx) => {
    const html = wantsHtml(ctx);
    await readText(ctx); // a form's fields, or nothing: the outcome is the button pressed
    let payment: PaymentRecord;
    try {
      payment = store.authenticationAct(ctx.params.id ?? '', action).record;
    } catch (err) {
      if (authenticationRefused(ctx, err, html)) return;
      throw err;
    }
    webhooks.send(
      payment.webhookUrl,
      paymentWebhookType(payment.status === 'succeeded' ? 'succeeded' : 'failed'),
      paymentJson(payment),
    );
    if (html && payment.returnUrl) {
      ctx.status = 303;
      ctx.set('Location', payment.returnUrl);
      ctx.body = { redirect: payment.returnUrl };
      return;
    }
    ctx.body = paymentJson(payment);
  };
  router.post('/authenticate/:id/authenticate', authenticate('authenticate'));
  router.post('/authenticate/:id/fail', authenticate('fail'));

  // ---- test surface ----

  router.use('/_admin', async (ctx, next) => {
    if (!adminAuthorized(ctx)) {
      ctx.set('WWW-Authenticate', 'Bearer');
      throw new SandboxError(401, 'unauthorized', 'Missing or wrong admin token (Authorization: Bearer <token>).');
    }
    await next();
  });

  router.get('/_admin/faults', (ctx) => {
    ctx.body = faultsJson(store.faults);
  });

  router.post('/_admin/faults', async (ctx) => {
    const body = parse(faultsBody, (await readJson(ctx)) ?? {}, 'body');
    store.faults = {
      payments: body.payments ?? 'ok',
      refunds: body.refunds ?? 'ok',
      disputes: body.disputes ?? 'ok',
      latencyMs: body.latencyMs ?? 0,
    };
    log.info({ faults: store.faults }, 'faults set');
    ctx.body = faultsJson(store.faults);
  });

  router.get('/_admin/ledger', (ctx) => {
    ctx.body = { entries: store.ledger.map(ledgerEntryJson) };
  });

  router.get('/_admin/requests', (ctx) => {
    ctx.body = { requests: store.requests };
  });

  router.post('/_admin/settle', async (ctx) => {
    const body = parse(settleBody, await readJson(ctx), 'body');
    const refund = store.settleRefund(body.reference, body.status, body.paymentTransactionId);
    webhooks.send(refund.webhookUrl, `refund.${body.status}`, refundJson(refund));
    ctx.body = refundJson(refund);
  });

  router.post('/_admin/settle-payment', async (ctx) => {
    const body = parse(settlePaymentBody, await readJson(ctx), 'body');
    ctx.body = paymentJson(settleNow(body.transactionId, body.status));
  });

  router.post('/_admin/disputes/:id/close', async (ctx) => {
    const body = parse(closeDisputeBody, await readJson(ctx), 'body');
    const change = disputes.close(ctx.params.id ?? '', body.status);
    announce(change);
    ctx.body = disputeJson(change.record);
  });

  router.post('/_admin/reset', async (ctx) => {
    await readText(ctx);
    forgetSettlements();
    cancelTimers();
    scheduled.clear();
    disputes.reset();
    store.reset();
    webhooks.cancelAll();
    log.info('state reset');
    ctx.body = { reset: true };
  });

  app.use(router.routes());
  app.use(() => {
    throw new SandboxError(404, 'not_found', 'No such route.');
  });

  const listen = async (port: number, host = '127.0.0.1'): Promise<RunningSandbox> => {
    const server = http.createServer(app.callback());
    const sockets = new Set<Socket>();
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address() as AddressInfo;
    const reachable = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
    const url = `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${address.port}`;
    listeningUrl ??= url;
    log.info({ url, checkoutBase: opts.publicBaseUrl ?? url }, 'sandbox listening');

    let closing: Promise<void> | undefined;
    const close = (): Promise<void> => {
      closing ??= new Promise<void>((resolve) => {
        webhooks.cancelAll();
        forgetSettlements();
        cancelTimers();
        for (const release of [...sleepers]) release();
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
        if (listeningUrl === url) listeningUrl = undefined;
      });
      return closing;
    };
    return { url, close };
  };

  return { app, store, disputes, listen };
}
