import { allHandlersFinished, condition, patched } from '@temporalio/workflow';
import { awaitRecordVisible } from '../recordVisibility';
import { SUBSCRIPTION_STEPS_V2, TEST_CLOCK_TIME } from '../patches';
import type { SubscriptionWorkflowInput, SubscriptionWorkflowResult } from '../subscriptionApi';
import { records } from './activities';
import { authorize } from './authorize';
import { watchHostedCard } from './card';
import { cancelStep } from './cancel';
import { settleAfterCancel } from './charge';
import { installHandlers } from './handlers';
import { legacySubscriptionWorkflow } from './legacy';
import { follow } from './outbox';
import { bill } from './periods';
import { clockStartOf, initialState, nowMs, type SubscriptionState } from './state';

/**
 * One subscription for its whole life (workflow id `subscription-<id>`): the card (a token, or
 * authorized by the customer on the provider's page), then one prepaid period after another,
 * phases first and evergreen last, each invoice charged at most once.
 *
 * A small workflow over an explicit state object (./state.ts) and named steps: authorize
 * (./authorize.ts), charge and retry (./charge.ts), renew (./periods.ts), cancel (./cancel.ts),
 * continue-as-new at any wait (./waits.ts). Cancellation is an Update taken between steps, so a
 * charge in flight finishes first and no new one starts.
 */
export async function subscriptionWorkflow(input: SubscriptionWorkflowInput): Promise<SubscriptionWorkflowResult> {
  // Runs started before the restructure go on as they began (their histories replay there).
  if (!patched(SUBSCRIPTION_STEPS_V2)) return legacySubscriptionWorkflow(input);

  const s = initialState(input);
  // On a test clock (decision 0090): its waits are for the clock's time. Asked only with a clock.
  if (input.testClock && patched(TEST_CLOCK_TIME)) s.clock = { id: input.testClock.id, nowMs: clockStartOf(input) };
  installHandlers(s);
  // A hosted card update the previous run left open is watched on.
  if (s.cardUpdate) watchHostedCard(s);

  if (!input.resume && !(await awaitRecordVisible('subscription', input.subscriptionId))) {
    s.discarded = true;
    return finish(s);
  }
  if (input.resume && !input.resume.emailsConfirmed) {
    // What an earlier run left unsent is sent now (a run never ends waiting on SMTP). A run that
    // saw every one of its emails sent says so in the cursor, and this look costs nothing then.
    follow(s, {
      status: s.status,
      emailIds: await records.unsentSubscriptionEmails(input.subscriptionId),
      eventIds: [],
    });
  }
  if (s.authorization) {
    if (!(await authorize(s))) return finish(s);
    s.authorization = null;
  }
  s.periodStartMs ??= nowMs(s);
  await bill(s);
  return finish(s);
}

/** The last step: a pending cancellation applied, background sends and handlers finished. */
async function finish(s: SubscriptionState): Promise<SubscriptionWorkflowResult> {
  if (s.cancel && s.status !== 'cancelled' && !s.discarded) await cancelStep(s, s.cancel);
  // An invoice `processing` when the subscription was cancelled waits for the processor (0060).
  if (s.status === 'cancelled' && s.collection?.undecided?.waiting === 'processing') await settleAfterCancel(s);
  // e.g. the row never appeared: a waiting API reads PostgreSQL
  s.firstOutcome ??= { kind: 'settled' };
  await condition(() => s.pendingSends === 0);
  await condition(allHandlersFinished);
  // The first outcome too: an API that asks after the run closed (a refused token) reads it here.
  return { status: s.status, firstOutcome: s.firstOutcome };
}
