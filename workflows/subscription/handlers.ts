import { ApplicationFailure, condition, setHandler } from '@temporalio/workflow';
import {
  cancelSubscriptionUpdate,
  customerCardSignal,
  handOverSignal,
  isCancelRequest,
  isClockTimeRequest,
  isCustomerCardSignal,
  isPaymentMethodRequest,
  providerInvoiceEventSignal,
  providerSubscriptionEventSignal,
  subscriptionStartedUpdate,
  subscriptionStateQuery,
  testClockTimeUpdate,
  UPDATE_REFUSED,
  updatePaymentMethodUpdate,
  type ClockTimeAnswer,
  type StartOutcome,
} from '../subscriptionApi';
import { PROVIDER_OUTCOME } from '../failures';
import { cardUpdatable, updateCard } from './card';
import { liveStateOf, noteCustomerCard, type SubscriptionState } from './state';

/**
 * The workflow's messages. Validators refuse what cannot be applied (a refused Update costs no
 * history); the API reads the refusal's type and answers from PostgreSQL.
 */
export function installHandlers(s: SubscriptionState): void {
  const ended = () => s.status === 'cancelled' || s.discarded;
  const quietAt = (atMs: number) => quietAtClock(s, atMs);
  setHandler(
    subscriptionStartedUpdate,
    async (): Promise<StartOutcome> => {
      await condition(() => s.firstOutcome !== null || s.status !== 'created' || s.closing);
      if (s.status !== 'created') return { kind: 'settled' };
      // Closing for continue-as-new before the first outcome: the provider is still being tried.
      return s.firstOutcome ?? { kind: PROVIDER_OUTCOME.unavailable };
    },
    {
      validator: () => {
        if (s.status !== 'created') throw ApplicationFailure.nonRetryable('already settled', UPDATE_REFUSED.settled);
      },
    },
  );

  setHandler(
    cancelSubscriptionUpdate,
    async (req) => {
      s.cancel ??= req; // a second request while the first is under way changes nothing
      await condition(() => s.status === 'cancelled' || s.discarded);
      return s.status;
    },
    {
      validator: (req) => {
        if (!isCancelRequest(req))
          throw ApplicationFailure.nonRetryable('invalid cancel request', UPDATE_REFUSED.invalid);
        if (s.status === 'cancelled' || s.discarded) {
          throw ApplicationFailure.nonRetryable('already cancelled', UPDATE_REFUSED.cancelled);
        }
      },
    },
  );

  setHandler(updatePaymentMethodUpdate, (req) => updateCard(s, req), {
    validator: (req) => {
      if (!isPaymentMethodRequest(req))
        throw ApplicationFailure.nonRetryable('invalid payment method request', UPDATE_REFUSED.invalid);
      if (!cardUpdatable(s)) {
        throw ApplicationFailure.nonRetryable(`not updatable (${s.status})`, UPDATE_REFUSED.notUpdatable);
      }
    },
  });

  setHandler(providerSubscriptionEventSignal, () => {
    s.providerEvent = true;
  });

  setHandler(providerInvoiceEventSignal, () => {
    s.invoiceEvent = true;
  });

  // Noted only: the wait for a new card decides what it means (decision 0088).
  setHandler(customerCardSignal, (req) => {
    if (isCustomerCardSignal(req) && !ended()) noteCustomerCard(s, req.paymentMethodId);
  });

  setHandler(handOverSignal, () => {
    s.handOverAsked = true;
  });

  setHandler(
    testClockTimeUpdate,
    async ({ nowMs }): Promise<ClockTimeAnswer> => {
      const clock = s.clock!;
      clock.nowMs = Math.max(clock.nowMs, nowMs);
      await condition(() => ended() || s.closing || quietAt(clock.nowMs));
      if (ended()) return { nextDueMs: null };
      if (s.closing) return { again: true };
      return { nextDueMs: s.clockWait?.untilMs ?? null };
    },
    {
      validator: (req) => {
        if (!s.clock || !isClockTimeRequest(req))
          throw ApplicationFailure.nonRetryable('not on a test clock', UPDATE_REFUSED.invalid);
      },
    },
  );

  setHandler(subscriptionStateQuery, () => liveStateOf(s));
}

/**
 * On a test clock: the run is parked in a wait the clock may move on from (nothing of the
 * advance's in flight) whose clock deadline is later than `atMs` (decision 0090).
 */
function quietAtClock(s: SubscriptionState, atMs: number): boolean {
  const w = s.clockWait;
  return w !== null && w.idle && (w.untilMs === null || w.untilMs > atMs);
}
