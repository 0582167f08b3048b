import { condition, setHandler } from '@temporalio/workflow';
import { providerRefundEventSignal, refundOutcomeUpdate, type RefundOutcome } from '../refundApi';
import type { RefundState } from './state';

/**
 * The workflow's messages: the API's wait for the first outcome (an Update) and the provider's
 * webhook (a signal the polling loop looks at).
 */
export function installHandlers(s: RefundState): void {
  setHandler(refundOutcomeUpdate, () => firstOutcome(s), { validator: () => refuseSettled(s) });
  setHandler(providerRefundEventSignal, () => {
    s.providerEvent = true;
  });
}

/** The refund's first outcome, once phase 1 knows it. */
async function firstOutcome(s: RefundState): Promise<RefundOutcome> {
  await condition(() => s.first !== undefined);
  return s.first!;
}

/** A replay for a settled refund: rejected, so it costs no history; the API reads PostgreSQL. */
function refuseSettled(s: RefundState): void {
  if (s.statusAttribute && s.settled && s.first !== undefined) throw new Error('The refund is settled.');
}
