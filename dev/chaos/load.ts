import { randomUUID } from 'node:crypto';
import { toMinor } from '../../src/rules/money';
import { sleep, type ChaosMerchant, type Recorder } from './client';

/**
 * The merchant traffic of a chaos run: token and hosted payments (paid or declined on the
 * sandbox page, some left unpaid), concurrent partial and full refunds on the same payments,
 * subscriptions renewing and being cancelled at random moments (some mid-charge), and probes
 * of one merchant's records with another merchant's key.
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

  const subscription = async (merchant: ChaosMerchant) => {
    const body = {
      amount: cents(100, 3_000),
      currency,
      billingIntervalDays: 1,
      externalId: `sub-${randomUUID()}`,
      cardToken: 'tok_success',
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
    await sleep(cancelAt - Date.now());
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
