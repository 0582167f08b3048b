import http from 'node:http';
import https from 'node:https';
import { type z } from 'zod';
import { toMajor } from '../../rules/money';
import { ProviderError, ProviderWebhookError } from '../errors';
import { verify } from '../signature';
import type {
  AttachPaymentMethodInput,
  AttachPaymentMethodResult,
  CreatePaymentInput,
  CreateRefundInput,
  PaymentLookup,
  PaymentProvider,
  ProviderDispute,
  ProviderPayment,
  ProviderRefund,
  RefundLookup,
} from '../types';
import {
  mapDispute,
  mapErrorStatus,
  mapPayment,
  mapPaymentMethod,
  mapVerificationDecline,
  mapRefund,
  mapWebhook,
  parseBody,
  sandboxDisputeSchema,
  sandboxPaymentList,
  sandboxPaymentMethodSchema,
  sandboxPaymentSchema,
  sandboxRefundList,
  sandboxRefundSchema,
} from './mapping';

export interface SandboxProviderOptions {
  baseUrl: string;
  apiKey: string;
  webhookSecret: string;
  /** Every call gives up after this long; the outcome is then unknown and must be asked for. */
  timeoutMs: number;
}

/** Connection errors that prove the request never reached the provider. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Keep-alive connections shared by every sandbox adapter of the process (one per configuration
 * is cached by the registry). Node's agent closes an idle one a second before the server's
 * announced keep-alive timeout, so a request rarely meets a connection the server is closing.
 */
const AGENTS = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) };

class CallTimeoutError extends Error {}

/** A non-2xx answer that is an answer, carried out of `call` (see `answerOf`). */
class AnsweredError extends Error {
  constructor(readonly answer: unknown) {
    super('answered');
  }
}

/**
 * One HTTP exchange on `node:http` with a keep-alive agent (`fetch`'s web streams and abort
 * signals were the largest part of the worker's extra CPU per payment: bench/RESULTS.md, fifteenth
 * issue-12 session). Resolves with the status and the whole body as text; rejects with the
 * socket's error, or CallTimeoutError after `timeoutMs` from the send (the request is then destroyed).
 */
function exchange(
  url: URL,
  method: 'GET' | 'POST',
  headers: Record<string, string>,
  body: string | undefined,
  timeoutMs: number,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = url.protocol === 'https:' ? https.request : http.request;
    const req = request(url, {
      method,
      agent: url.protocol === 'https:' ? AGENTS['https:'] : AGENTS['http:'],
      headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
    });
    const timer = setTimeout(() => req.destroy(new CallTimeoutError()), timeoutMs);
    const fail = (err: Error) => {
      clearTimeout(timer);
      reject(err);
    };
    req.on('error', fail);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      // A connection lost mid-answer: the request's own 'error' follows ('aborted').
      res.on('error', fail);
      res.on('end', () => {
        clearTimeout(timer);
        if (res.complete) resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        else reject(new Error('the answer was cut off'));
      });
    });
    req.end(body);
  });
}

/** The HTTP adapter for the provider sandbox (docs/provider-sandbox.md). */
export class SandboxProvider implements PaymentProvider {
  readonly name = 'sandbox';

  constructor(private readonly opts: SandboxProviderOptions) {}

  private async call<T extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    schema: T,
    body?: unknown,
    headers: Record<string, string> = {},
    allowNotFound = false,
    /** Reads a non-2xx answer that is an answer (a declined card verification), before it is an error. */
    answerOf?: (status: number, text: string) => unknown,
  ): Promise<z.output<T> | null> {
    let res: { status: number; text: string };
    try {
      res = await exchange(
        new URL(`${this.opts.baseUrl}${path}`),
        method,
        {
          authorization: `Bearer ${this.opts.apiKey}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body === undefined ? undefined : JSON.stringify(body),
        this.opts.timeoutMs,
      );
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code && NOT_SENT.has(code)) throw new ProviderError('unavailable', `provider unreachable (${code})`);
      if (err instanceof CallTimeoutError) {
        throw new ProviderError('timeout', `provider did not answer within ${this.opts.timeoutMs} ms`);
      }
      // Sent, perhaps performed: the outcome is unknown, as after a timeout.
      throw new ProviderError('timeout', `provider connection failed mid-request (${code ?? (err as Error).message})`);
    }
    if (allowNotFound && res.status === 404) return null;
    if (res.status < 200 || res.status >= 300) {
      const answer = answerOf?.(res.status, res.text);
      if (answer) throw new AnsweredError(answer);
      throw mapErrorStatus(res.status, res.text);
    }
    return parseBody(schema, res.text);
  }

  async createPayment(input: CreatePaymentInput): Promise<ProviderPayment> {
    const body = {
      amount: toMajor(input.amountMinor, input.currency),
      currency: input.currency,
      mode: input.mode,
      ...(input.cardToken ? { cardToken: input.cardToken } : {}),
      ...(input.offSession ? { offSession: true } : {}),
      ...(input.returnUrl ? { returnUrl: input.returnUrl } : {}),
      ...(input.webhookUrl ? { webhookUrl: input.webhookUrl } : {}),
      ...(input.saveCard ? { saveCard: true } : {}),
      ...(input.description ? { description: input.description } : {}),
      metadata: input.metadata,
    };
    const p = await this.call('POST', '/v1/payments', sandboxPaymentSchema, body, {
      'idempotency-key': input.idempotencyKey,
    });
    return mapPayment(p!);
  }

  async findPayment(by: { transactionId: string } | PaymentLookup): Promise<ProviderPayment | null> {
    if ('transactionId' in by) {
      const p = await this.call(
        'GET',
        `/v1/payments/${encodeURIComponent(by.transactionId)}`,
        sandboxPaymentSchema,
        undefined,
        {},
        true,
      );
      return p ? mapPayment(p) : null;
    }
    const list = await this.call(
      'GET',
      `/v1/payments?idempotencyKey=${encodeURIComponent(by.idempotencyKey)}`,
      sandboxPaymentList,
    );
    const first = list!.data[0];
    return first ? mapPayment(first) : null;
  }

  async cancelPayment(transactionId: string): Promise<ProviderPayment> {
    const p = await this.call(
      'POST',
      `/v1/payments/${encodeURIComponent(transactionId)}/cancel`,
      sandboxPaymentSchema,
      {},
    );
    return mapPayment(p!);
  }

  async createRefund(input: CreateRefundInput): Promise<ProviderRefund> {
    const body = {
      paymentId: input.transactionId,
      amount: toMajor(input.amountMinor, input.currency),
      currency: input.currency,
      reference_id: input.referenceId,
      ...(input.reason ? { reason: input.reason } : {}),
      ...(input.webhookUrl ? { webhookUrl: input.webhookUrl } : {}),
      metadata: input.metadata,
    };
    const r = await this.call('POST', '/v1/refunds', sandboxRefundSchema, body, {
      'idempotency-key': input.idempotencyKey,
    });
    return mapRefund(r!);
  }

  async findRefund(
    by: { refundId: string } | RefundLookup | { referenceId: string; transactionId: string },
  ): Promise<ProviderRefund | null> {
    if ('refundId' in by) {
      const r = await this.call(
        'GET',
        `/v1/refunds/${encodeURIComponent(by.refundId)}`,
        sandboxRefundSchema,
        undefined,
        {},
        true,
      );
      return r ? mapRefund(r) : null;
    }
    const query =
      'idempotencyKey' in by
        ? `idempotencyKey=${encodeURIComponent(by.idempotencyKey)}`
        : `reference_id=${encodeURIComponent(by.referenceId)}&paymentId=${encodeURIComponent(by.transactionId)}`;
    const list = await this.call('GET', `/v1/refunds?${query}`, sandboxRefundList);
    const first = list!.data[0];
    return first ? mapRefund(first) : null;
  }

  async findDispute(disputeId: string): Promise<ProviderDispute | null> {
    const d = await this.call(
      'GET',
      `/v1/disputes/${encodeURIComponent(disputeId)}`,
      sandboxDisputeSchema,
      undefined,
      {},
      true,
    );
    return d ? mapDispute(d) : null;
  }

  async submitDisputeEvidence(disputeId: string, text: string): Promise<ProviderDispute> {
    const d = await this.call('POST', `/v1/disputes/${encodeURIComponent(disputeId)}/evidence`, sandboxDisputeSchema, {
      text,
    });
    return mapDispute(d!);
  }

  async acceptDispute(disputeId: string): Promise<ProviderDispute> {
    const d = await this.call('POST', `/v1/disputes/${encodeURIComponent(disputeId)}/accept`, sandboxDisputeSchema, {});
    return mapDispute(d!);
  }

  async attachPaymentMethod(input: AttachPaymentMethodInput): Promise<AttachPaymentMethodResult> {
    const body = {
      cardToken: input.cardToken,
      // The sandbox has no customers of its own: the card is kept under ours.
      customer: input.customer.providerCustomerId ?? input.customer.id,
      metadata: input.metadata,
    };
    try {
      const pm = await this.call(
        'POST',
        '/v1/payment_methods',
        sandboxPaymentMethodSchema,
        body,
        { 'idempotency-key': input.idempotencyKey },
        false,
        mapVerificationDecline,
      );
      return mapPaymentMethod(pm!);
    } catch (err) {
      if (err instanceof AnsweredError) return err.answer as AttachPaymentMethodResult;
      throw err;
    }
  }

  async detachPaymentMethod(reference: string): Promise<void> {
    await this.call(
      'POST',
      `/v1/payment_methods/${encodeURIComponent(reference)}/detach`,
      sandboxPaymentMethodSchema,
      {},
      {},
      true,
    );
  }

  parseWebhook(rawBody: string, headers: Record<string, string | string[] | undefined>) {
    const header = headers['sandbox-signature'];
    if (!verify(this.opts.webhookSecret, rawBody, Array.isArray(header) ? header[0] : header)) {
      throw new ProviderWebhookError('signature does not verify');
    }
    try {
      return mapWebhook(JSON.parse(rawBody));
    } catch (err) {
      throw new ProviderWebhookError(`unexpected webhook body: ${(err as Error).message.slice(0, 200)}`);
    }
  }
}
