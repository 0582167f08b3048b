import type { ChargeRequest } from '../../activities/subscriptions';

interface Opened {
  kind: string;
  invoiceId?: string;
  attempts?: number;
}

/**
 * `openAndChargeInvoice` for a workflow test's stubbed activities, composed as the real activity
 * composes it: the stub's `openInvoice`, then, for an open invoice, its `chargeInvoice` with
 * attempt 1, or the last attempt recorded (looked up at each call, so a test may swap either stub).
 */
export function composedOpenAndCharge(activities: {
  openInvoice: (period: never) => Promise<Opened>;
  chargeInvoice: (request: ChargeRequest) => Promise<unknown>;
}) {
  return jest.fn(async (input: { period: unknown; retryDelayMs: number | null; discardOnReject: boolean }) => {
    const opened = await activities.openInvoice(input.period as never);
    if (opened.kind !== 'open' || !opened.invoiceId) return { opened };
    const charged = await activities.chargeInvoice({
      invoiceId: opened.invoiceId,
      attempt: Math.max(1, opened.attempts ?? 0),
      retryDelayMs: input.retryDelayMs,
      discardOnReject: input.discardOnReject,
    });
    return { opened, charged };
  });
}
