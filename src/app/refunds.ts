import { quotasOf, type QuotaSettings } from '../rules/quotas';
import type { EntityManager } from '@mikro-orm/postgresql';
import { PROVIDER_OUTCOME } from '../rules/providerFailures';
import { createOrFindRefund, refundViewById, type RefundRequest, type RefundResponse } from '../domain/refunds';
import type { RecordScope } from '../domain/scope';
import type { RefundGateway } from '../temporal/refundGateway';
import { providerTrouble, workflowServiceUnavailable } from './workflowTrouble';

/**
 * The refund use cases the API's routes call: the domain (PostgreSQL) and the refund's workflow
 * (its gateway) together, and what their outcome is answered as.
 */
export interface RefundUseCases {
  em: EntityManager;
  refunds: Pick<RefundGateway, 'startAndAwaitOutcome'>;
  /** Per-merchant quotas (decision 0079): here the refunds a payment may have. */
  quotas?: Partial<QuotaSettings>;
}

/**
 * POST /payments/{paymentId}/refund: creates the refund (or finds the one its externalId names),
 * starts its workflow and answers the refund, terminal or `pending`, or the error that says what
 * is left.
 */
export async function createRefund(
  deps: RefundUseCases,
  caller: RecordScope,
  paymentId: string,
  body: RefundRequest,
): Promise<RefundResponse> {
  const created = await createOrFindRefund(deps.em, caller, paymentId, body, {
    maxRefunds: quotasOf(deps.quotas).refundsPerPayment,
  });
  // Committed, slot reserved. If the workflow cannot be started now (Temporal unreachable,
  // this process dies), the orphan sweeper starts it: the refund proceeds either way.
  const { refund, payment } = created;
  const outcome = await deps.refunds.startAndAwaitOutcome({
    id: refund.id,
    externalId: refund.externalId,
    paymentId: payment.id,
    merchantId: caller.merchantId,
    amountMinor: refund.amountMinor,
    currency: refund.currency,
    callbackUrl: payment.callbackUrl,
  });
  // A hint sent by the settlement itself carries the refund as it committed.
  const settled = typeof outcome === 'object' && 'refund' in outcome ? outcome.refund : undefined;
  const view = settled ?? (await refundViewById(deps.em, refund.id));
  if (outcome === 'unreachable' && view.status === 'pending') {
    throw workflowServiceUnavailable(
      'The workflow service is temporarily unavailable; the refund is recorded and will proceed. Retry with the same externalId to see it.',
      { refund: view },
    );
  }
  if (typeof outcome !== 'object') return view;
  if (outcome.kind === PROVIDER_OUTCOME.unavailable) {
    throw providerTrouble(
      outcome.kind,
      'The payment provider is unreachable; the refund failed and nothing was refunded.',
      { refund: view },
    );
  }
  if (outcome.kind === PROVIDER_OUTCOME.invalid && view.status === 'pending') {
    throw providerTrouble(
      outcome.kind,
      'The payment provider returned an invalid response; the refund stays pending until the provider confirms it.',
      { refund: view },
    );
  }
  return view;
}
