import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  patched,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import {
  PAYMENT_UPDATE_REFUSED,
  providerPaymentEventSignal,
  submitPaymentUpdate,
  type PaymentWorkflowInput,
  type PaymentCursor,
  type SubmitOutcome,
} from './paymentApi';
import { deliverEvents } from './deliverEvents';
import { failureType } from './failures';
import {
  attemptActivities,
  commitBeforeProviderCall,
  localAttempts,
  patientActivities,
  remoteAttempts,
} from './providerActivities';
import {
  ATTEMPT_ON_START,
  BOUNDED_HISTORIES,
  HANDLERS_DRAINED,
  LOCAL_PROVIDER_ATTEMPT,
  START_ATTEMPT_LOCAL,
  STATUS_SEARCH_ATTRIBUTES,
  hasChangeSinceV2,
  type HasChange,
} from './patches';
import { runIsLong } from './runBound';
import { PaymentStatusKey } from './searchAttributes';

type State = 'awaiting_attempt' | 'awaiting_customer' | 'settled' | 'discarded';

/** The PaymentStatus search attribute of a state (`created` as the API starts it). */
const paymentStatusOf = (state: State) => (state === 'awaiting_attempt' ? 'created' : state);

/**
 * One payment, from the merchant's request to a final status and the merchant's callbacks.
 * A payment is captured at most once: every attempt and every question to the provider uses
 * the payment id as idempotency key, and an ambiguous answer is never retried blindly: the
 * workflow asks the provider until it knows.
 *
 * Every payment the API or the sweeper starts runs this type: it began with every change listed
 * in `hasChangeSinceV2`, so its history carries no marker for them.
 */
export async function paymentWorkflowV2(input: PaymentWorkflowInput): Promise<{ state: State }> {
  return runPayment(input, hasChangeSinceV2);
}

/** Payments started before `paymentWorkflowV2`: the same code, each change behind its marker. */
export async function paymentWorkflow(input: PaymentWorkflowInput): Promise<{ state: State }> {
  return runPayment(input, patched);
}

/**
 * Since BOUNDED_HISTORIES a long run (repeats while the provider is down, webhooks while the
 * customer is on the hosted page) continues as new (same type) at its wait, carrying its state
 * in `resume`.
 */
async function runPayment(input: PaymentWorkflowInput, hasChange: HasChange): Promise<{ state: State }> {
  const { paymentId, resume } = input;
  let state = (resume?.state ?? 'awaiting_attempt') as State;
  const statusAttribute = hasChange(STATUS_SEARCH_ATTRIBUTES);
  const bounded = hasChange(BOUNDED_HISTORIES);
  const isLong = () => bounded && runIsLong(input.historyEventLimit);
  /** Handing over to a new run: a new submit is refused (the API sends it again, to that run). */
  let closing = false;
  /** Moves the payment on, and says so to operators (PaymentStatus) since STATUS_SEARCH_ATTRIBUTES. */
  const setState = (next: State) => {
    if (next === state) return;
    state = next;
    if (statusAttribute) upsertSearchAttributes([{ key: PaymentStatusKey, value: paymentStatusOf(next) }]);
  };
  // Read through a function where an await may have changed it (defeats narrowing).
  const current = (): State => state;
  // The request that started this run asked for an attempt: made even if its Update is lost.
  let attemptRequested = !resume && input.attemptOnStart === true && hasChange(ATTEMPT_ON_START);
  // That first attempt's request is in the start event: it needs no task of its own before the call.
  let startAttempt = attemptRequested;
  let completedAttempts = resume?.completedAttempts ?? 0;
  let lastOutcome: SubmitOutcome = resume?.lastOutcome ?? { kind: 'provider_unavailable' };
  let ambiguous = resume?.ambiguous ?? false;
  let providerEvent = resume?.providerEvent ?? false;

  setHandler(
    submitPaymentUpdate,
    async (): Promise<SubmitOutcome> => {
      if (state === 'settled') return { kind: 'settled' };
      if (state === 'awaiting_customer') return { kind: 'created' };
      if (state === 'discarded' || ambiguous) return lastOutcome;
      const target = completedAttempts + 1;
      attemptRequested = true;
      await condition(() => completedAttempts >= target || current() === 'settled');
      return current() === 'settled' ? { kind: 'settled' } : lastOutcome;
    },
    {
      // A repeat for a settled payment: rejected, so it costs no history; the API reads PostgreSQL.
      validator: () => {
        if (statusAttribute && state === 'settled') {
          throw ApplicationFailure.nonRetryable('The payment is settled.', PAYMENT_UPDATE_REFUSED.settled);
        }
        if (closing) {
          throw ApplicationFailure.nonRetryable('Handing over to a new run.', PAYMENT_UPDATE_REFUSED.handingOver);
        }
      },
    },
  );
  setHandler(providerPaymentEventSignal, () => {
    providerEvent = true;
  });

  const follow = (kind: 'settled' | 'created' | 'not_found' | 'missing') => {
    if (kind === 'settled') setState('settled');
    else if (kind === 'created') setState('awaiting_customer');
    else if (kind === 'missing') setState('discarded');
    // not_found: the provider never saw the request; it may be attempted again.
  };

  const attempt = async (): Promise<SubmitOutcome> => {
    const requestedByStart = startAttempt;
    startAttempt = false;
    // A request the start committed is called from this task (START_ATTEMPT_LOCAL); a submit
    // Update's acceptance is saved in the history before the provider is asked.
    const calls =
      requestedByStart && hasChange(START_ATTEMPT_LOCAL)
        ? localAttempts
        : (await commitBeforeProviderCall(hasChange)) === 'activity'
          ? remoteAttempts
          : attemptActivities(hasChange);
    try {
      const result = await calls.attemptProviderPayment(paymentId);
      if (result.kind === 'rejected') {
        setState('discarded');
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

  /**
   * At the wait, idle (no attempt asked for, no webhook to look at): a long run hands its state
   * to a new one. Submits accepted so far have their answers; new ones are refused meanwhile.
   */
  const handOverIfLong = async () => {
    if (attemptRequested || providerEvent || !isLong()) return;
    closing = true;
    await condition(allHandlersFinished);
    await continueAsNew<typeof paymentWorkflowV2>({
      ...input,
      resume: {
        state: state as PaymentCursor['state'],
        completedAttempts,
        lastOutcome,
        ambiguous,
        providerEvent,
        runs: (resume?.runs ?? 0) + 1,
      },
    });
  };

  const expiresAt = Date.parse(input.expiresAt);
  while (state === 'awaiting_attempt' || state === 'awaiting_customer') {
    if (ambiguous) {
      follow(await patientActivities.reconcileProviderPayment(paymentId));
      ambiguous = false;
      continue;
    }
    const remaining = expiresAt - Date.now();
    if (remaining <= 0) {
      follow(await patientActivities.expireProviderPayment(paymentId));
      break;
    }
    await handOverIfLong();
    // A run that grows long while waiting (repeats, webhooks) wakes to hand over.
    await condition(() => attemptRequested || providerEvent || isLong(), remaining);
    if (providerEvent) {
      providerEvent = false;
      follow(await patientActivities.reconcileProviderPayment(paymentId));
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

  // Let any update waiting on the last attempt answer before the run ends (drained, not just asked).
  completedAttempts++;
  // Older runs went on at once (a no-op check), and their histories replay so.
  if (hasChange(HANDLERS_DRAINED)) await condition(allHandlersFinished);
  // Since LOCAL_PROVIDER_ATTEMPT the API says whether there is a callbackUrl at all.
  const callbacks = !hasChange(LOCAL_PROVIDER_ATTEMPT) || input.callbacks !== false;
  if (state === 'settled' && callbacks) await deliverEvents(paymentId, input.callbackRetryInitialSeconds);
  return { state };
}
