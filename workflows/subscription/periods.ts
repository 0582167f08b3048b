import { patched } from '@temporalio/workflow';
import type { OpenedInvoice } from '../../activities/subscriptions';
import { periodMillis, phaseOfPeriod } from '../../src/rules/subscriptionPlan';
import { RENEWAL_OPEN_IN_CHARGE, SUBSCRIPTION_CANCEL_INTENT } from '../patches';
import { openInvoice } from './activities';
import { cancelStep } from './cancel';
import { collect, openAndCharge, type MadeAttempt } from './charge';
import { follow } from './outbox';
import { nowMs, type SubscriptionState } from './state';
import { waitUntil } from './waits';

/** When the period being billed ends (the next one starts there: periods never shift). */
function periodEndMs(s: SubscriptionState): number {
  const { phase } = phaseOfPeriod(s.input.plan, s.periodIndex);
  return s.periodStartMs! + periodMillis(phase, s.input.billingDaySeconds);
}

/**
 * Prepaid periods, one after another, for as long as the subscription lives: at each period's
 * start its invoice (free periods are paid at once), then its collection. A period billed late
 * (retries or an outage past the next start) is followed at once by the next, in order.
 */
export async function bill(s: SubscriptionState): Promise<void> {
  for (;;) {
    // The period's first attempt when it was made with the opening of its invoice.
    let made: MadeAttempt | undefined;
    if (s.collection === null) {
      if (!(await waitUntil(s, s.periodStartMs!))) return;
      const periodEnd = periodEndMs(s);
      const { phase } = phaseOfPeriod(s.input.plan, s.periodIndex);
      const period = {
        subscriptionId: s.input.subscriptionId,
        periodIndex: s.periodIndex,
        phaseId: phase.id,
        amountMinor: phase.amountMinor,
        periodStart: new Date(s.periodStartMs!).toISOString(),
        periodEnd: new Date(periodEnd).toISOString(),
        // On a test clock the invoice's dates are the clock's (decision 0090).
        ...(s.clock ? { atMs: s.clock.nowMs } : {}),
      };
      let opened: OpenedInvoice;
      if (patched(RENEWAL_OPEN_IN_CHARGE)) ({ opened, made } = await openAndCharge(s, period));
      else opened = await openInvoice(period);
      if (opened.kind === 'missing') {
        s.discarded = true;
        return;
      }
      if (opened.kind === 'cancelled') {
        // A recorded DELETE the step applied (decision 0076): its email is sent as any other.
        if (opened.outbox && patched(SUBSCRIPTION_CANCEL_INTENT)) follow(s, opened.outbox);
        s.status = 'cancelled';
        return;
      }
      follow(s, opened.outbox);
      s.live = {
        invoiceId: opened.invoiceId,
        currentPeriodStart: new Date(s.periodStartMs!).toISOString(),
        currentPeriodEnd: new Date(periodEnd).toISOString(),
      };
      if (opened.kind === 'open') {
        s.collection = {
          invoiceId: opened.invoiceId,
          attempts: opened.attempts,
          nextAttemptAtMs: nowMs(s),
          unavailableStreak: 0,
          first: s.periodIndex === 0,
        };
      }
    }
    if (s.collection !== null) {
      const result = await collect(s, made);
      if (result === 'cancel') return;
      s.collection = null;
      if (result === 'discarded') {
        s.discarded = true;
        return;
      }
      if (result === 'exhausted') {
        await cancelStep(s, { reason: 'payment_failed', notify: true });
        return;
      }
    }
    s.periodStartMs = periodEndMs(s);
    s.periodIndex++;
    if (s.cancel) return;
  }
}
