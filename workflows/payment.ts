import {
  allHandlersFinished,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
} from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  providerPaymentEventSignal,
  submitPaymentUpdate,
  type PaymentWorkflowInput,
  type SubmitOutcome,
} from './paymentApi';
import { deliverEvents } from './deliverEvents';
import { failureType } from './failures';
import { LOCAL_PROVIDER_ATTEMPT } from './patches';

/** One provider attempt: a few quick retries while the provider is unavailable, within the API's wait. */
const attemptOptions: ActivityOptions = {
  // Past the provider's own call timeout; a worker that dies mid-call is detected by this.
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '200 ms',
    backoffCoefficient: 2,
    maximumAttempts: 3,
    nonRetryableErrorTypes: ['timeout', 'invalid_response'],
  },
};
/**
 * The provider call runs as a local activity: no round trip through the server before the
 * merchant's answer. Its idempotency key makes the re-run after a worker crash safe.
 */
const localAttemptActs = proxyLocalActivities<Activities>(attemptOptions);
/** Before LOCAL_PROVIDER_ATTEMPT: kept so that workflows started then replay unchanged. */
const attemptActs = proxyActivities<Activities>(attemptOptions);

/** Asking the provider what happened: as long as it takes, backing off to once a minute. */
const reconcileActs = proxyActivities<Activities>({
  startToCloseTimeout: '15 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

type State = 'awaiting_attempt' | 'awaiting_customer' | 'settled' | 'discarded';

/**
 * One payment, from the merchant's request to a final status and the merchant's callbacks.
 * A payment is captured at most once: every attempt and every question to the provider uses
 * the payment id as idempotency key, and an ambiguous answer is never retried blindly: the
 * workflow asks the provider until it knows.
 */
export async function paymentWorkflow(input: PaymentWorkflowInput): Promise<{ state: State }> {
  const { paymentId } = input;
  let state = 'awaiting_attempt' as State;
  // Read through a function where an await may have changed it (defeats narrowing).
  const current = (): State => state;
  let attemptRequested = false;
  let completedAttempts = 0;
  let lastOutcome: SubmitOutcome = { kind: 'provider_unavailable' };
  let ambiguous = false;
  let providerEvent = false;

  setHandler(submitPaymentUpdate, async (): Promise<SubmitOutcome> => {
    if (state === 'settled') return { kind: 'settled' };
    if (state === 'awaiting_customer') return { kind: 'created' };
    if (state === 'discarded' || ambiguous) return lastOutcome;
    const target = completedAttempts + 1;
    attemptRequested = true;
    await condition(() => completedAttempts >= target || current() === 'settled');
    return current() === 'settled' ? { kind: 'settled' } : lastOutcome;
  });
  setHandler(providerPaymentEventSignal, () => {
    providerEvent = true;
  });

  const follow = (kind: 'settled' | 'created' | 'not_found' | 'missing') => {
    if (kind === 'settled') state = 'settled';
    else if (kind === 'created') state = 'awaiting_customer';
    else if (kind === 'missing') state = 'discarded';
    // not_found: the provider never saw the request; it may be attempted again.
  };

  const attempt = async (): Promise<SubmitOutcome> => {
    try {
      const result = await (patched(LOCAL_PROVIDER_ATTEMPT) ? localAttemptActs : attemptActs).attemptProviderPayment(
        paymentId,
      );
      if (result.kind === 'rejected') {
        state = 'discarded';
        return result;
      }
      follow(result.kind);
      return result.kind === 'created' ? { kind: 'created' } : { kind: 'settled' };
    } catch (err) {
      const type = failureType(err);
      if (type === 'unavailable') return { kind: 'provider_unavailable' };
      // Anything else may have happened after the provider acted: find out, never guess.
      ambiguous = true;
      return type === 'invalid_response' ? { kind: 'provider_invalid' } : { kind: 'provider_timeout' };
    }
  };

  const expiresAt = Date.parse(input.expiresAt);
  while (state === 'awaiting_attempt' || state === 'awaiting_customer') {
    if (ambiguous) {
      follow(await reconcileActs.reconcileProviderPayment(paymentId));
      ambiguous = false;
      continue;
    }
    const remaining = expiresAt - Date.now();
    if (remaining <= 0) {
      follow(await reconcileActs.expireProviderPayment(paymentId));
      break;
    }
    await condition(() => attemptRequested || providerEvent, remaining);
    if (providerEvent) {
      providerEvent = false;
      follow(await reconcileActs.reconcileProviderPayment(paymentId));
    }
    // Always consume the request: a duplicate arriving while the customer is on the hosted
    // page must not leave the flag set (the condition above would then never block again).
    const wantsAttempt = attemptRequested;
    attemptRequested = false;
    if (wantsAttempt && state === 'awaiting_attempt') {
      lastOutcome = await attempt();
      completedAttempts++;
    }
  }

  // Let any update waiting on the last attempt answer before the run ends.
  completedAttempts++;
  await allHandlersFinished();
  // Since LOCAL_PROVIDER_ATTEMPT the API says whether there is a callbackUrl at all.
  const callbacks = !patched(LOCAL_PROVIDER_ATTEMPT) || input.callbacks !== false;
  if (state === 'settled' && callbacks) await deliverEvents(paymentId, input.callbackRetryInitialSeconds);
  return { state };
}
