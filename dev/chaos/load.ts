import { randomUUID } from 'node:crypto';
import { toMinor } from '../../src/rules/money';
import { sleep, type Answer, type ChaosMerchant, type Recorder } from './client';

/**
 * The merchant traffic of a chaos run: token and hosted payments (paid or declined on the
 * sandbox page, some left unpaid), concurrent partial and full refunds on the same payments,
 * subscriptions renewing and being cancelled at random moments (some mid-charge), probes of one
 * merchant's records with another merchant's key, and the processor lifecycle (PRODUCT.md):
 * 3-D Secure payments authenticated or failed on their page (sometimes twice, sometimes inside a
 * provider fault window), processing payments settled by the sandbox's timer or at once by its
 * admin route, and disputed payments (refunds racing the dispute, refunds refused while it is
 * open, evidence submitted or the dispute accepted, the processor deciding won or lost).
 */
export interface LoadOptions {
  recorder: Recorder;
  merchants: [ChaosMerchant, ChaosMerchant];
  /** Stop starting new work at this moment (epoch ms). */
  until: number;
  /** Concurrent token-payment loops (default 3). */
  paymentLoops?: number;
  /** Subscriptions to run in all (default 1 per 10 s of the run). */
  subscriptions?: number;
  /** The sandbox (its authentication pages answer the load; its admin routes settle and decide). */
  sandboxUrl?: string;
  /** Concurrent lifecycle-payment loops (3-D Secure, processing, disputes; default 1). */
  lifecycleLoops?: number;
  /**
   * Subscriptions on `tok_processing` and `tok_3ds_offsession` too (default off): renewals
   * processing, or awaiting the customer's authentication at the invoice's `hostedUrl`. Off until
   * the finding in decision 0028's amendment is fixed (an invoice voided at a DELETE whose attempt
   * the processor captured).
   */
  lifecycleSubscriptions?: boolean;
  /**
   * A third merchant whose webhook endpoint hangs (issue 43): one token-payment loop of its own, so
   * its events keep coming, each delivery held until the attempt's 10 s run out. Its payments are
   * checked like the others'; it is not part of the cross-merchant probes.
   */
  hangingMerchant?: ChaosMerchant;
}

interface Known {
  merchant: ChaosMerchant;
  path: string;
}

const currency = 'USD';
/** How long a subscription of the load lives before its cancellation (at most half the run). */
const SUBSCRIPTION_MIN_LIFETIME_MS = 15_000;
const SUBSCRIPTION_MAX_LIFETIME_MS = 240_000;
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;
const cents = (min: number, max: number) => (min + Math.floor(Math.random() * (max - min))) / 100;

export async function runLoad(opts: LoadOptions): Promise<void> {
  const { recorder } = opts;
  const known: Known[] = [];
  const inFlight = new Set<Promise<void>>();
  const track = (work: Promise<void>) => {
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  };
  const running = () => Date.now() < opts.until;
  const otherThan = (m: ChaosMerchant) => (m === opts.merchants[0] ? opts.merchants[1] : opts.merchants[0]);

  const refundConcurrently = async (merchant: ChaosMerchant, paymentId: string, amount: number) => {
    // Two or three refunds at once on one payment: partial ones and sometimes a full one.
    const requests = Array.from({ length: 2 + Math.floor(Math.random() * 2) }, () =>
      Math.random() < 0.3 ? undefined : Math.max(0.01, Math.round(amount * (0.2 + Math.random() * 0.4) * 100) / 100),
    );
    await Promise.all(
      requests.map(async (refundAmount) => {
        const body = {
          externalId: `rf-${randomUUID()}`,
          ...(refundAmount === undefined ? {} : { amount: refundAmount }),
        };
        const answer = await recorder.callUntilAnswered(
          refundAmount === undefined ? 'refund (full)' : 'refund (partial)',
          merchant,
          'POST',
          `/payments/${paymentId}/refund`,
          body,
        );
        const refund = answer.body;
        if (answer.status === 200 && typeof refund?.id === 'string') {
          recorder.acknowledge({
            kind: 'refund',
            id: refund.id,
            merchantId: merchant.id,
            status: String(refund.status),
            at: answer.at,
            paymentId,
            amountMinor: toMinorUnits(Number(refund.amount)),
          });
          known.push({ merchant, path: `/refunds/${refund.id}` });
        }
      }),
    );
  };

  /** POST /payments until answered; an acknowledged payment is remembered for the checks. */
  const createPayment = async (operation: string, merchant: ChaosMerchant, body: { amount: number }) => {
    const answer = await recorder.callUntilAnswered(operation, merchant, 'POST', '/payments', body);
    const payment = answer.body;
    if (answer.status !== 200 || typeof payment?.id !== 'string') return undefined;
    recorder.acknowledge({
      kind: 'payment',
      id: payment.id,
      merchantId: merchant.id,
      status: String(payment.status),
      at: answer.at,
      amountMinor: toMinorUnits(body.amount),
    });
    known.push({ merchant, path: `/payments/${payment.id}` });
    return { ...payment, id: payment.id } as Record<string, unknown> & { id: string };
  };

  const tokenPayment = async (merchant: ChaosMerchant) => {
    const amount = cents(100, 20_000);
    const body = {
      amount,
      currency,
      externalId: `pay-${randomUUID()}`,
      cardToken: Math.random() < 0.9 ? 'tok_success' : 'tok_decline',
      customer: { email: 'chaos@example.com', name: 'Chaos' },
    };
    const payment = await createPayment('payment (token)', merchant, body);
    if (!payment) return;
    if (payment.status === 'succeeded' && Math.random() < 0.5) track(refundConcurrently(merchant, payment.id, amount));
  };

  const hostedPayment = async (merchant: ChaosMerchant) => {
    const amount = cents(100, 5_000);
    const body = {
      amount,
      currency,
      externalId: `hosted-${randomUUID()}`,
      customer: { email: 'chaos@example.com', name: 'Chaos' },
    };
    const payment = await createPayment('payment (hosted)', merchant, body);
    if (!payment) return;
    const choice = Math.random();
    if (choice < 0.15 || typeof payment.redirectUrl !== 'string') return; // the customer walks away
    await sleep(500 + Math.random() * 2000);
    const action = choice < 0.85 ? 'pay' : 'decline';
    const started = Date.now();
    try {
      const res = await fetch(`${payment.redirectUrl}/${action}`, { method: 'POST', redirect: 'manual' });
      recorder.answers.push({
        operation: `checkout page (${action})`,
        status: res.status,
        code: '',
        startedAt: started,
        at: Date.now(),
        body: undefined,
      });
      await res.body?.cancel();
    } catch {
      recorder.answers.push({
        operation: `checkout page (${action})`,
        status: 0,
        code: 'connection_error',
        startedAt: started,
        at: Date.now(),
        body: undefined,
      });
    }
  };

  /** A POST the customer (or the processor's admin) makes outside the API: its answer is counted. */
  const postOutside = async (operation: string, url: string, body?: unknown): Promise<Answer> => {
    const started = Date.now();
    let status = 0;
    let parsed: Record<string, unknown> | undefined;
    let code = '';
    try {
      const res = await fetch(url, {
        method: 'POST',
        redirect: 'manual',
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      status = res.status;
      const text = await res.text();
      try {
        parsed = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
      } catch {
        parsed = undefined;
      }
      // The sandbox answers `{ error: { code, message } }`.
      const error = parsed?.error as { code?: unknown } | undefined;
      code = typeof error?.code === 'string' ? error.code : '';
    } catch {
      code = 'connection_error';
    }
    const answer: Answer = { operation, status, code, startedAt: started, at: Date.now(), body: parsed };
    recorder.answers.push(answer);
    return answer;
  };

  /** GET a payment until `done` says its status is the one awaited (or `tries` run out). */
  const readPayment = async (
    merchant: ChaosMerchant,
    paymentId: string,
    done: (status: string) => boolean,
    tries = 20,
  ): Promise<Record<string, unknown> | undefined> => {
    let last: Record<string, unknown> | undefined;
    for (let i = 0; i < tries; i++) {
      const answer = await recorder.callUntilAnswered('payment read', merchant, 'GET', `/payments/${paymentId}`);
      if (answer.status === 200 && answer.body) {
        last = answer.body;
        if (done(String(last.status))) return last;
      }
      await sleep(1000 + Math.random() * 1000);
    }
    return last;
  };

  /** What the API said of a payment after the first answer (invariants 5 and 7 hold it to the ledger). */
  const acknowledgeState = (merchant: ChaosMerchant, paymentId: string, body: Record<string, unknown> | undefined) => {
    if (!body || typeof body.status !== 'string') return;
    recorder.acknowledge({
      kind: 'payment',
      id: paymentId,
      merchantId: merchant.id,
      status: body.status,
      at: Date.now(),
    });
  };

  const lifecycleBody = (prefix: string, cardToken: string) => ({
    amount: cents(100, 20_000),
    currency,
    externalId: `${prefix}-${randomUUID()}`,
    cardToken,
    customer: { email: 'chaos@example.com', name: 'Chaos' },
  });

  /**
   * tok_3ds: the customer authenticates most (sometimes twice, the second answer a 409), fails
   * some; a few authenticated ones are refunded. A payment whose first answer was not
   * `requires_action` yet (its create met a fault) is read until it is.
   */
  const authenticatedPayment = async (merchant: ChaosMerchant) => {
    const body = lifecycleBody('pay3ds', 'tok_3ds');
    let payment: Record<string, unknown> | undefined = await createPayment('payment (3ds)', merchant, body);
    if (!payment) return;
    const id = String(payment.id);
    if (payment.status !== 'requires_action') {
      payment = await readPayment(merchant, id, (s) => s !== 'created');
      if (payment?.status !== 'requires_action') return;
    }
    const url = (payment.nextAction as { url?: string } | null)?.url;
    if (typeof url !== 'string') return;
    await sleep(300 + Math.random() * 2000);
    const action = Math.random() < 0.8 ? 'authenticate' : 'fail';
    await postOutside(`authentication page (${action})`, `${url}/${action}`);
    if (Math.random() < 0.2) {
      // A double click, or the other button after the first: the page captures nothing more.
      const again = Math.random() < 0.5 ? action : action === 'authenticate' ? 'fail' : 'authenticate';
      await postOutside(`authentication page (${again}, again)`, `${url}/${again}`);
    }
    const settled = await readPayment(merchant, id, (s) => s !== 'requires_action' && s !== 'created');
    acknowledgeState(merchant, id, settled);
    if (settled?.status === 'succeeded' && Math.random() < 0.3) {
      track(refundConcurrently(merchant, id, body.amount));
    }
  };

  /** tok_processing / tok_processing_fail: settled by the sandbox's timer, or at once by its admin. */
  const processingPayment = async (merchant: ChaosMerchant) => {
    const fails = Math.random() < 0.3;
    const body = lifecycleBody('payproc', fails ? 'tok_processing_fail' : 'tok_processing');
    const payment = await createPayment(fails ? 'payment (processing fail)' : 'payment (processing)', merchant, body);
    if (!payment) return;
    const id = payment.id;
    if (opts.sandboxUrl && Math.random() < 0.3 && typeof payment.providerTransactionId === 'string') {
      // The processor decides now (racing its own timer: a 409 payment_not_processing then).
      await sleep(Math.random() * 2000);
      await postOutside('settle payment (admin)', `${opts.sandboxUrl}/_admin/settle-payment`, {
        transactionId: payment.providerTransactionId,
        status: Math.random() < 0.7 ? 'succeeded' : 'failed',
      });
    }
    const settled = await readPayment(merchant, id, (s) => s !== 'processing' && s !== 'created');
    acknowledgeState(merchant, id, settled);
    if (settled?.status === 'succeeded' && Math.random() < 0.3) {
      track(refundConcurrently(merchant, id, body.amount));
    }
  };

  /** A full refund (of what is refundable); one answered 200 is acknowledged. */
  const fullRefund = async (operation: string, merchant: ChaosMerchant, paymentId: string) => {
    const answer = await recorder.callUntilAnswered(operation, merchant, 'POST', `/payments/${paymentId}/refund`, {
      externalId: `rf-${randomUUID()}`,
    });
    const refund = answer.body;
    if (answer.status === 200 && typeof refund?.id === 'string') {
      recorder.acknowledge({
        kind: 'refund',
        id: refund.id,
        merchantId: merchant.id,
        status: String(refund.status),
        at: answer.at,
        paymentId,
        amountMinor: toMinorUnits(Number(refund.amount)),
      });
      known.push({ merchant, path: `/refunds/${refund.id}` });
    }
  };

  /**
   * tok_dispute: captured, then disputed by the processor 2 s later. Sometimes refunds race the
   * dispute's opening; once it is open a refund is refused (409 charge_disputed, an expected
   * answer); then evidence is submitted (the processor decides won or lost), the dispute is
   * accepted, or left to be lost at its deadline; after a decision, a refund of what is left.
   */
  const disputedPayment = async (merchant: ChaosMerchant) => {
    const body = lifecycleBody('paydsp', 'tok_dispute');
    const payment = await createPayment('payment (dispute)', merchant, body);
    if (!payment || payment.status !== 'succeeded') return;
    const id = payment.id;
    if (Math.random() < 0.3) {
      await sleep(Math.random() * 2500);
      await refundConcurrently(merchant, id, body.amount);
    }
    let dispute: Record<string, unknown> | undefined;
    for (let i = 0; i < 15 && !dispute; i++) {
      await sleep(1000 + Math.random() * 1000);
      const list = await recorder.callUntilAnswered(
        'dispute list',
        merchant,
        'GET',
        `/disputes?paymentId=${encodeURIComponent(id)}`,
      );
      const found = (list.body?.disputes as Array<Record<string, unknown>> | undefined) ?? [];
      dispute = found[0];
    }
    if (!dispute || typeof dispute.id !== 'string') return; // nothing left to dispute, or not told yet
    known.push({ merchant, path: `/disputes/${dispute.id}` });
    if (Math.random() < 0.6) {
      await fullRefund('refund (disputed)', merchant, id);
    }
    const choice = Math.random();
    if (choice < 0.5) {
      await recorder.callUntilAnswered('dispute evidence', merchant, 'POST', `/disputes/${dispute.id}/evidence`, {
        text: 'Delivered, signed for.',
        submit: Math.random() < 0.8,
      });
    } else if (choice < 0.75) {
      await recorder.callUntilAnswered('dispute accept', merchant, 'POST', `/disputes/${dispute.id}/accept`, {});
    }
    // The processor decides (an accepted or already lost one answers 409 dispute_closed); the
    // rest stay needs_response until their deadline (lost) or under_review.
    if (opts.sandboxUrl && typeof dispute.providerDisputeId === 'string' && Math.random() < 0.7) {
      await sleep(500 + Math.random() * 2000);
      const outcome = Math.random() < 0.5 ? 'won' : 'lost';
      await postOutside(
        `dispute close (admin ${outcome})`,
        `${opts.sandboxUrl}/_admin/disputes/${encodeURIComponent(dispute.providerDisputeId)}/close`,
        { status: outcome },
      );
    }
    if (Math.random() < 0.5) {
      await sleep(1000 + Math.random() * 2000);
      await fullRefund('refund (after dispute)', merchant, id);
    }
  };

  const lifecyclePayment = (merchant: ChaosMerchant) => {
    const r = Math.random();
    return r < 0.4 ? authenticatedPayment(merchant) : r < 0.7 ? processingPayment(merchant) : disputedPayment(merchant);
  };

  const subscription = async (merchant: ChaosMerchant) => {
    const body = {
      amount: cents(100, 3_000),
      currency,
      billingIntervalDays: 1,
      externalId: `sub-${randomUUID()}`,
      cardToken: subscriptionCard(),
      retryScheduleDays: [1, 1, 2],
      customer: { email: `chaos-${randomUUID().slice(0, 8)}@example.com`, name: 'Chaos' },
    };
    const answer = await recorder.callUntilAnswered('subscription create', merchant, 'POST', '/subscriptions', body);
    const sub = answer.body;
    if (answer.status !== 200 || typeof sub?.id !== 'string') return;
    recorder.acknowledge({
      kind: 'subscription',
      id: sub.id,
      merchantId: merchant.id,
      status: String(sub.status),
      at: answer.at,
    });
    known.push({ merchant, path: `/subscriptions/${sub.id}` });
    // Each lives a bounded while, then is cancelled (at a random moment of a period, so some
    // while a renewal is charging); what is left is cancelled when the load ends, so nothing
    // renews while the invariants are read. A bounded lifetime keeps the renewals per second the
    // same however long the run: in the first 30-minute run subscriptions lived to a random
    // moment of the whole run, ~110 renewed every 15 s by the end, and 2 cores fell minutes behind.
    const cancelAt = Math.min(opts.until, Date.now() + lifetimeMs());
    if (body.cardToken === 'tok_3ds_offsession') {
      track(authenticateRenewals(merchant, sub.id, cancelAt + Math.random() * 3000));
    }
    await sleep(Math.max(0, cancelAt - Date.now()));
    const cancel = await recorder.callUntilAnswered(
      'subscription cancel',
      merchant,
      'DELETE',
      `/subscriptions/${sub.id}`,
    );
    if (cancel.status === 200) {
      recorder.acknowledge({
        kind: 'cancellation',
        id: sub.id,
        merchantId: merchant.id,
        status: 'cancelled',
        at: cancel.at,
      });
    }
  };

  /**
   * A subscription's card: `tok_success`; with `lifecycleSubscriptions`, some `tok_processing` (every charge settled
   * 3 s later: the invoice's attempt is undecided meanwhile, and no other attempt may start) and
   * `tok_3ds_offsession` (renewals and retries ask the customer to authenticate).
   */
  const subscriptionCard = () => {
    if (!opts.lifecycleSubscriptions) return 'tok_success';
    const r = Math.random();
    return r < 0.15 ? 'tok_processing' : r < 0.3 ? 'tok_3ds_offsession' : 'tok_success';
  };
  /**
   * The customer of a `tok_3ds_offsession` subscription: reads it every 2-4 s and, when its
   * latest invoice is `requires_action`, authenticates (70 %) or fails (30 %, a soft decline: the
   * retry asks again) at its `hostedUrl`, once per page; until a moment near its cancellation
   * (sometimes just after the DELETE: the page then answers 410, the attempt cancelled at the
   * processor first).
   */
  const authenticateRenewals = async (merchant: ChaosMerchant, subscriptionId: string, untilMs: number) => {
    const acted = new Set<string>();
    while (Date.now() < untilMs) {
      await sleep(2000 + Math.random() * 2000);
      const answer = await recorder.call('subscription read', merchant, 'GET', `/subscriptions/${subscriptionId}`);
      const invoice = answer.body?.latestInvoice as { status?: unknown; hostedUrl?: unknown } | null | undefined;
      const url = invoice?.hostedUrl;
      if (invoice?.status !== 'requires_action' || typeof url !== 'string' || acted.has(url)) continue;
      acted.add(url);
      await sleep(Math.random() * 1500);
      const action = Math.random() < 0.7 ? 'authenticate' : 'fail';
      await postOutside(`invoice authentication page (${action})`, `${url}/${action}`);
    }
  };

  const loop = async (pause: () => number, work: () => Promise<void>) => {
    while (running()) {
      await work().catch(() => undefined);
      await sleep(pause());
    }
  };

  const duration = Math.max(1, opts.until - Date.now());
  const subscriptions = opts.subscriptions ?? Math.max(2, Math.round(duration / 10_000));
  const lifetimeMs = () =>
    SUBSCRIPTION_MIN_LIFETIME_MS +
    Math.random() * Math.max(0, Math.min(SUBSCRIPTION_MAX_LIFETIME_MS, duration / 2) - SUBSCRIPTION_MIN_LIFETIME_MS);
  const loops: Array<Promise<void>> = [];
  for (let i = 0; i < (opts.paymentLoops ?? 3); i++) {
    loops.push(
      loop(
        () => 200 + Math.random() * 400,
        () => tokenPayment(pick(opts.merchants)),
      ),
    );
  }
  loops.push(
    loop(
      () => 800 + Math.random() * 800,
      () => hostedPayment(pick(opts.merchants)),
    ),
  );
  const hangingMerchant = opts.hangingMerchant;
  if (hangingMerchant) {
    loops.push(
      loop(
        () => 500 + Math.random() * 1000,
        () => tokenPayment(hangingMerchant),
      ),
    );
  }
  // Each lifecycle payment runs on by itself (its page, its settlement, its dispute take seconds),
  // so a new one starts every ~1 s per loop whatever the last one waits for.
  for (let i = 0; i < (opts.lifecycleLoops ?? 1); i++) {
    loops.push(
      loop(
        () => 700 + Math.random() * 700,
        async () => track(lifecyclePayment(pick(opts.merchants)).catch(() => undefined)),
      ),
    );
  }
  loops.push(
    loop(
      () => duration / subscriptions,
      async () => track(subscription(pick(opts.merchants))),
    ),
  );
  loops.push(
    loop(
      () => 300,
      async () => {
        const record = known.length > 0 ? pick(known) : undefined;
        if (record) await recorder.probeCrossMerchant(otherThan(record.merchant), record.path);
      },
    ),
  );
  await Promise.all(loops);
  while (inFlight.size > 0) await Promise.all([...inFlight]);
}

function toMinorUnits(amount: number): number {
  const result = toMinor(amount, currency);
  if (!result.ok) throw new Error(`chaos sent an invalid amount ${amount}`);
  return result.minor;
}
