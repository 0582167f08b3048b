import { Context } from '@temporalio/activity';
import {
  openPeriodInvoice,
  remindAuthentication,
  type OpenedInvoice,
  type Outbox,
} from '../../src/domain/subscriptions';
import type { ActivityDeps } from '../deps';
import type { Mailer } from '../emails';
import { createInvoiceCharging } from './charging';
import { emailProfileOf } from './shared';
import type { CancelledAttempt, ChargeOutcome, ChargeRequest, OpenedAndCharged, PeriodInvoiceInput } from './types';

/**
 * A period's invoice and its charges: opened (free periods paid at once), charged with the
 * subscription's card under one provider key per attempt, an ambiguous attempt asked about by its
 * key; a recorded charge's emails sent right after its commit, in the same activity.
 */
export function createInvoiceActivities(deps: ActivityDeps, mailer: Mailer) {
  const { orm } = deps;
  const profile = emailProfileOf(deps);
  const { charge, reconcile, cancelAttempt } = createInvoiceCharging(deps);

  const openPeriod = (input: PeriodInvoiceInput, markChargeSent = false): Promise<OpenedInvoice> =>
    openPeriodInvoice(
      orm.em.fork(),
      {
        ...input,
        periodStart: new Date(input.periodStart),
        periodEnd: new Date(input.periodEnd),
        ...(input.atMs !== undefined ? { at: new Date(input.atMs) } : {}),
      },
      { markChargeSent, profile },
    );

  /**
   * A recorded charge's emails (the receipt, or the payment-failed notice) are sent here, right
   * after the commit, within what is left of the activity's time less a margin (at most 2 s): the
   * workflow is answered only the ids not confirmed sent, and sends those as before. One local
   * activity and one workflow activation less per renewal (issue 12); the email is still claimed,
   * sent and marked sent exactly as the sendEmail activity does it.
   */
  async function sendingItsEmails<T extends ChargeOutcome>(outcome: T): Promise<T> {
    if (!('outbox' in outcome) || !outcome.outbox || outcome.outbox.emailIds.length === 0) return outcome;
    const info = Context.current().info;
    const left = info.startToCloseTimeoutMs - (Date.now() - info.currentAttemptScheduledTimestampMs);
    const claimed = 'claimed' in outcome ? outcome.claimed : undefined;
    const unsent = await mailer.sendWithin(outcome.outbox.emailIds, Math.min(2_000, left - 2_000), claimed);
    const answer = { ...outcome, outbox: { ...outcome.outbox, emailIds: unsent } };
    // What was claimed (the email's text) is this process's, never part of the workflow's answer.
    if ('claimed' in answer) delete answer.claimed;
    return answer;
  }

  return {
    /** A billing period begins: its invoice (free periods are paid at once). */
    async openInvoice(input: PeriodInvoiceInput): Promise<OpenedInvoice> {
      return openPeriod(input);
    },

    /** One attempt to charge an invoice with the subscription's card. */
    async chargeInvoice(req: ChargeRequest): Promise<ChargeOutcome> {
      return sendingItsEmails(await charge(req));
    },

    /**
     * A billing period begins: its invoice opened (or found) and its first attempt, as
     * `chargeInvoice` makes it (RENEWAL_OPEN_IN_CHARGE: one step of the workflow instead of two).
     * Idempotent as a whole: run again, it finds the invoice, and the attempt answers what is
     * recorded or asks the provider again under the same key.
     */
    async openAndChargeInvoice(input: {
      period: PeriodInvoiceInput;
      retryDelayMs: number | null;
      discardOnReject: boolean;
    }): Promise<OpenedAndCharged> {
      const marked = await openPeriod(input.period, true);
      if (marked.kind !== 'open') return { opened: marked };
      const { chargeMarkedSent, forCharge, ...opened } = marked;
      // Attempts recorded already (this step retried after its attempt was recorded, or an
      // earlier run's): the last one is answered from the record, as a retried charge is.
      const request = {
        invoiceId: opened.invoiceId,
        attempt: Math.max(1, opened.attempts),
        retryDelayMs: input.retryDelayMs,
        discardOnReject: input.discardOnReject,
        onSession: input.period.periodIndex === 0 && Math.max(1, opened.attempts) === 1,
        ...(input.period.atMs !== undefined ? { atMs: input.period.atMs } : {}),
      };
      return { opened, charged: await sendingItsEmails(await charge(request, chargeMarkedSent === true, forCharge)) };
    },

    /** After an ambiguous attempt: what became of it at the provider (by its idempotency key)? */
    async reconcileInvoiceCharge(req: ChargeRequest): Promise<ChargeOutcome> {
      return sendingItsEmails(await reconcile(req));
    },

    /**
     * An attempt awaiting authentication cancelled at the processor (decision 0060); `release`:
     * a new card is charged next.
     */
    async cancelInvoiceAttempt(input: { request: ChargeRequest; release: boolean }): Promise<CancelledAttempt> {
      const outcome = await cancelAttempt(input.request, input.release);
      return outcome.kind === 'canceled' ? outcome : sendingItsEmails(outcome);
    },

    /** A reminder to authenticate the invoice's waiting attempt (a date of the retry schedule). */
    async remindInvoiceAuthentication(input: {
      subscriptionId: string;
      invoiceId: string;
      attempt: number;
      reminder: number;
      cancelAt: string;
    }): Promise<Outbox | null> {
      return remindAuthentication(orm.em.fork(), { ...input, cancelAt: new Date(input.cancelAt) }, profile);
    },
  };
}
