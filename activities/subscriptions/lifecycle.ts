import { ApplicationFailure } from '@temporalio/activity';
import { Invoice, Subscription } from '../../src/db/entities';
import { applyInvoiceCharge, cancelSubscription, type Outbox } from '../../src/domain/subscriptions';
import type { ProviderPayment } from '../../src/providers/types';
import type { ActivityDeps } from '../deps';
import { recordProvider } from '../recordProvider';
import { reconcileFailure } from '../providerFailures';
import { chargeLookup, chargeResultOf, emailProfileOf, subscriptionRecords } from './shared';
import { PROVIDER_NOT_CONFIGURED } from '../../src/rules/providerFailures';

/**
 * The record's life around the billing: whether it is recorded yet, the emails it still has to
 * send, and its cancellation (open invoices voided; a charge in doubt asked about first).
 */
export function createLifecycleActivities(deps: ActivityDeps) {
  const { orm, providers, logger } = deps;
  const profile = emailProfileOf(deps);
  const { load, providerOf } = subscriptionRecords(deps);

  /**
   * Before a cancellation voids the open invoice: if a charge of it was sent and its outcome
   * never recorded (the mark is cleared when an attempt is known declined or did nothing), the
   * provider is asked by that attempt's key, and a capture is recorded (the invoice paid) rather
   * than voided. Normally the workflow has settled every attempt before it cancels; this guards
   * runs whose attempt result was lost. The answer is needed: provider trouble is retried.
   */
  async function settleChargeInDoubt(s: Subscription): Promise<Outbox | null> {
    const invoice = await orm.em
      .fork()
      .findOne(
        Invoice,
        { subscription: s.id, status: 'open', providerCallSentAt: { $ne: null } },
        { populate: ['subscription'] },
      );
    if (!invoice) return null;
    const provider = await recordProvider(providers, s);
    if (!provider) throw ApplicationFailure.retryable(`no provider ${s.processor}`, PROVIDER_NOT_CONFIGURED);
    const attempt = invoice.attempts + 1;
    let pp: ProviderPayment | null;
    try {
      pp = await provider.findPayment(chargeLookup(invoice, attempt));
    } catch (err) {
      throw reconcileFailure(err);
    }
    // Nothing captured under that key: the invoice is voided as usual.
    if (pp?.status !== 'succeeded') return null;
    logger.warn(
      { subscriptionId: s.id, invoiceId: invoice.id, transactionId: pp.transactionId },
      'open invoice was captured by an attempt whose result was lost; recorded paid before cancelling',
    );
    const result = chargeResultOf(logger, invoice, pp);
    if (result.kind === 'undecided') return null;
    const applied = await applyInvoiceCharge(orm.em, invoice, attempt, result, null, { profile });
    return applied.kind === 'paid' ? applied.outbox : null;
  }

  return {
    /** Is the subscription recorded yet (the API commits right after starting its workflow)? */
    async subscriptionRecorded(subscriptionId: string): Promise<boolean> {
      return (await orm.em.fork().count(Subscription, { id: subscriptionId })) > 0;
    },
    /** The emails of this subscription still unsent (a new run sends them: nothing is dropped). */
    async unsentSubscriptionEmails(subscriptionId: string): Promise<string[]> {
      const rows: Array<{ id: string }> = await orm.em
        .getConnection()
        .execute(`select id from emails where dedupe_key like ? and sent_at is null order by created_at`, [
          `${subscriptionId}:%`,
        ]);
      return rows.map((r) => r.id);
    },
    /**
     * Cancels the subscription record (open invoices voided) with its email and event. A hosted
     * authorization still open at the provider is cancelled too, so its page stops working.
     */
    async cancelSubscriptionRecord(input: {
      subscriptionId: string;
      reason: string;
      notify: boolean;
    }): Promise<Outbox | null> {
      const s = await load(input.subscriptionId);
      if (!s) return null;
      if (s.status === 'pending' && s.setupTransactionId && !s.cardToken) {
        try {
          await (await providerOf(s)).cancelPayment(s.setupTransactionId);
        } catch (err) {
          // The page may stay usable a while; it cannot lead to a charge (the workflow is done).
          logger.warn({ subscriptionId: s.id, err }, 'could not cancel the card authorization');
        }
      }
      const charged = await settleChargeInDoubt(s);
      const cancelled = await cancelSubscription(orm.em, input.subscriptionId, input.reason, input.notify, profile);
      if (!charged || !cancelled) return cancelled;
      // The receipt and charge event are followed with the cancellation's.
      return {
        ...cancelled,
        emailIds: [...charged.emailIds, ...cancelled.emailIds],
        eventIds: [...charged.eventIds, ...cancelled.eventIds],
      };
    },
  };
}
