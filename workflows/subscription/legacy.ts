import {
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { ChargeOutcome, ChargeRequest } from '../../activities/subscriptions';
import {
  periodMillis,
  phaseOfPeriod,
  retryDelayMillis,
  type Outbox,
  type SubscriptionStatus,
} from '../../src/rules/subscriptionPlan';
import { failureType } from '../failures';
import { EVENT_DELIVERY_QUEUE, LEGACY_HAND_OVER, LEGACY_HANDLERS_DRAINED } from '../patches';
import { merchantEventsWorkflow } from '../merchantEvents';
import { attemptOptions, patientActivities } from '../providerActivities';
import { SubscriptionStatusKey } from '../searchAttributes';
import {
  cancelSubscriptionUpdate,
  handOverSignal,
  providerSubscriptionEventSignal,
  subscriptionStartedUpdate,
  subscriptionStateQuery,
  subscriptionWorkflowId,
  type CancelRequest,
  type StartOutcome,
  type SubscriptionWorkflowInput,
  type SubscriptionWorkflowResult,
} from '../subscriptionApi';

/** Provider attempts: local (no server round trip), a few quick retries while unavailable. */
const attempts = proxyLocalActivities<Activities>(attemptOptions);
/** Database-only state changes: local, retried until PostgreSQL answers. */
const records = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
/** Customer emails: sent in the background, retried for a day (the outbox keeps the last error). */
const mail = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '1 day',
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});

/** How long the subscription row may take to appear before its transaction counts as rolled back. */
const VISIBILITY_WAIT_MS = 60_000;

/** Continue-as-new well before the bound of 1,000 events per run. */
export const DEFAULT_HISTORY_EVENT_LIMIT = 600;
const MAX_HISTORY_EVENT_LIMIT = 900;
/** How long a run about to continue as new waits for its background sends. */
const SEND_DRAIN_MS = 30_000;

/** While the provider is unreachable (nothing charged): wait, then try the same attempt again. */
const unavailableBackoffMs = (streak: number) => Math.min(10_000 * 2 ** (streak - 1), 600_000);

type Collection = 'paid' | 'exhausted' | 'cancel' | 'discarded';

/** Failures of an attempt that prove nothing was charged. */
const NOTHING_CHARGED = ['unavailable', 'no_card', 'provider_not_configured'];

/**
 * FROZEN: the subscription workflow as it ran before `subscription-steps-v2` (workflows/patches.ts).
 * Runs started before that patch replay and go on here until their next continue-as-new, which
 * starts the current code (./index.ts). Never change what this function does; delete it once no
 * such run can be open (the longest is one history limit of periods, about 60).
 *
 * One subscription for its whole life: the card (token, or authorized by the customer on the
 * provider's page), then one prepaid period after another, phases first and evergreen last.
 * Each period has one invoice, charged at most once: every attempt carries its own idempotency
 * key derived from the invoice id, the next attempt starts only after the previous one is known
 * to have been declined, and an ambiguous answer is asked about, never retried blindly.
 *
 * Cancellation is an Update: it takes effect between steps, so a charge in flight finishes first
 * and no new one starts. The history stays bounded: the run continues as new between periods.
 */
export async function legacySubscriptionWorkflow(
  input: SubscriptionWorkflowInput,
): Promise<SubscriptionWorkflowResult> {
  const { subscriptionId, plan, billingDaySeconds } = input;
  const historyLimit = Math.min(input.historyEventLimit ?? DEFAULT_HISTORY_EVENT_LIMIT, MAX_HISTORY_EVENT_LIMIT);
  const runs = input.resume?.runs ?? 0;

  let status: SubscriptionStatus = input.resume?.status ?? 'created';
  let firstOutcome: StartOutcome | null = input.resume ? { kind: 'settled' } : null;
  let cancelRequest: CancelRequest | null = null;
  let discarded = false;
  let providerEvent = false;
  let pendingSends = 0;
  /** An operator's `handOver` signal (legacy-hand-over-v1): continue as new into ./index.ts. */
  let handOverAsked = false;
  const live = {
    periodIndex: input.resume?.periodIndex ?? 0,
    currentPeriodStart: null as string | null,
    currentPeriodEnd: null as string | null,
    invoiceId: null as string | null,
    attempts: 0,
    nextAttemptAt: null as string | null,
  };
  // Read through functions where an await may have changed them (defeats narrowing).
  const cancelRequested = () => cancelRequest !== null;
  const currentStatus = () => status;

  setHandler(subscriptionStartedUpdate, async (): Promise<StartOutcome> => {
    if (status !== 'created') return { kind: 'settled' };
    await condition(() => firstOutcome !== null || currentStatus() !== 'created');
    return currentStatus() !== 'created' ? { kind: 'settled' } : firstOutcome!;
  });
  setHandler(cancelSubscriptionUpdate, async (req: CancelRequest): Promise<SubscriptionStatus> => {
    if (status === 'cancelled' || discarded) return status;
    cancelRequest ??= req; // a second request while the first is under way changes nothing
    await condition(() => currentStatus() === 'cancelled' || discarded);
    return currentStatus();
  });
  setHandler(providerSubscriptionEventSignal, () => {
    providerEvent = true;
  });
  // Histories recorded before it carry no such signal: nothing they replay changes.
  setHandler(handOverSignal, () => {
    handOverAsked = true;
  });
  setHandler(subscriptionStateQuery, () => ({
    status,
    ...live,
    cancelRequested: cancelRequest !== null,
    runs,
  }));

  const setStatus = (next: SubscriptionStatus) => {
    if (next === status) return;
    status = next;
    if (next !== 'created') firstOutcome = { kind: 'settled' };
    upsertSearchAttributes([{ key: SubscriptionStatusKey, value: next }]);
  };

  /** Follows a state change: its status, then its emails and merchant events, in the background. */
  const follow = (outbox: Outbox | null | undefined) => {
    if (!outbox) return;
    setStatus(outbox.status);
    for (const emailId of outbox.emailIds) {
      pendingSends++;
      void mail
        .sendEmail(emailId)
        .catch(() => undefined) // gave up after a day: the outbox row says why
        .finally(() => pendingSends--);
    }
    // Since EVENT_DELIVERY_QUEUE the merchant's delivery workflow delivers them (decision 0069).
    if (input.callbacks && outbox.eventIds.length > 0 && !patched(EVENT_DELIVERY_QUEUE)) {
      pendingSends++;
      void startChild(merchantEventsWorkflow, {
        workflowId: `${subscriptionWorkflowId(subscriptionId)}-events-${outbox.eventIds[0]}`,
        args: [{ eventIds: outbox.eventIds, callbackRetryInitialSeconds: input.callbackRetryInitialSeconds }],
        parentClosePolicy: 'ABANDON',
      })
        .catch(() => undefined) // already started by an earlier attempt of this step
        .finally(() => pendingSends--);
    }
  };

  /**
   * Sleeps until `at` (epoch ms) unless a cancellation arrives (or, between periods, `wake()`
   * holds: a hand-over); true when not cancelled.
   */
  const sleepUntil = async (at: number, wake: () => boolean = () => false): Promise<boolean> => {
    const ms = at - Date.now();
    if (ms > 0 && !cancelRequested() && !wake()) await condition(() => cancelRequested() || wake(), ms);
    return !cancelRequested();
  };

  const cancel = async (req: CancelRequest) => {
    const outbox = await records.cancelSubscriptionRecord({ subscriptionId, ...req });
    if (outbox) follow(outbox);
    else discarded = true;
  };

  const finish = async () => {
    if (cancelRequest && status !== 'cancelled' && !discarded) await cancel(cancelRequest);
    firstOutcome ??= { kind: 'settled' }; // e.g. the row never appeared: a waiting API reads PostgreSQL
    await condition(() => pendingSends === 0);
    // Handlers drained (legacy-handlers-drained-v1); before it, the no-op its histories recorded.
    if (patched(LEGACY_HANDLERS_DRAINED)) await condition(allHandlersFinished);
    // The old line awaited a boolean: one microtask, kept as it ran for histories without the marker.
    else await Promise.resolve();
    // The first outcome too: an API that asks after the run closed (a refused token) reads it here.
    return { status, firstOutcome };
  };

  // The API starts this workflow inside the transaction that records the subscription: the row
  // may take a moment to appear; if it never does (rolled back), there is nothing to do.
  if (!input.resume) {
    let recorded = await records.subscriptionRecorded(subscriptionId);
    for (let waited = 0; !recorded && waited < VISIBILITY_WAIT_MS; waited += 250) {
      await sleep(250);
      recorded = await records.subscriptionRecorded(subscriptionId);
    }
    if (!recorded) {
      discarded = true;
      return finish();
    }
  }

  // ---- the card: authorized by the customer on the provider's page when no token was given ----
  if (!input.resume && input.needsAuthorization) {
    const authorized = await authorize();
    if (!authorized) return finish();
  }

  // A new run first sends what an earlier one left unsent (a run never ends waiting on SMTP).
  if (input.resume) follow({ status, emailIds: await records.unsentSubscriptionEmails(subscriptionId), eventIds: [] });

  // ---- billing periods ----
  let periodStart = input.resume?.periodStartMs ?? Date.now();
  let firstPeriod = !input.resume;
  for (;;) {
    // Between periods (a legacy cursor says no more): an operator's hand-over wakes the sleep.
    const handOverDue = () => handOverAsked && !firstPeriod;
    if (!(await sleepUntil(periodStart, handOverDue))) break;
    if (handOverDue() && patched(LEGACY_HAND_OVER)) {
      if (pendingSends > 0) await condition(() => pendingSends === 0 || cancelRequested(), SEND_DRAIN_MS);
      await condition(() => cancelRequested() || allHandlersFinished());
      if (cancelRequested()) break;
      // Into the current code: it takes a legacy cursor, as at the history limit.
      return continueAsNew<typeof legacySubscriptionWorkflow>({
        ...input,
        resume: { status, periodIndex: live.periodIndex, periodStartMs: periodStart, runs: runs + 1 },
      });
    }
    const { phase } = phaseOfPeriod(plan, live.periodIndex);
    const periodEnd = periodStart + periodMillis(phase, billingDaySeconds);
    const opened = await records.openInvoice({
      subscriptionId,
      periodIndex: live.periodIndex,
      phaseId: phase.id,
      amountMinor: phase.amountMinor,
      periodStart: new Date(periodStart).toISOString(),
      periodEnd: new Date(periodEnd).toISOString(),
    });
    if (opened.kind === 'missing') {
      discarded = true;
      break;
    }
    if (opened.kind === 'cancelled') break;
    follow(opened.outbox);
    Object.assign(live, {
      currentPeriodStart: new Date(periodStart).toISOString(),
      currentPeriodEnd: new Date(periodEnd).toISOString(),
      invoiceId: opened.invoiceId,
      attempts: opened.attempts,
      nextAttemptAt: null,
    });
    if (opened.kind === 'open') {
      const result = await collect(opened.invoiceId, opened.attempts, firstPeriod);
      if (result === 'discarded') {
        discarded = true;
        break;
      }
      if (result === 'exhausted') {
        await cancel({ reason: 'payment_failed', notify: true });
        break;
      }
      if (result === 'cancel') break;
    }
    firstPeriod = false;
    live.periodIndex++;
    periodStart = periodEnd;
    if (cancelRequested()) break;

    const info = workflowInfo();
    if (info.historyLength >= historyLimit || info.continueAsNewSuggested) {
      // Between periods: background sends finish first (usually milliseconds). SMTP down: the
      // run goes on until the hard limit, then continues anyway (the next run resends).
      if (pendingSends > 0) await condition(() => pendingSends === 0 || cancelRequested(), SEND_DRAIN_MS);
      const mustContinue = info.historyLength >= MAX_HISTORY_EVENT_LIMIT;
      if ((pendingSends === 0 || mustContinue) && !cancelRequested()) {
        if (patched(LEGACY_HANDLERS_DRAINED)) await condition(allHandlersFinished);
        // The old no-op (a boolean awaited): one microtask, as its histories recorded.
        else await Promise.resolve();
        if (!cancelRequested()) {
          return continueAsNew<typeof legacySubscriptionWorkflow>({
            ...input,
            resume: { status, periodIndex: live.periodIndex, periodStartMs: periodStart, runs: runs + 1 },
          });
        }
      }
    }
  }
  return finish();

  /** Creates the hosted authorization, then waits for the customer (or the expiry, or a cancel). */
  async function authorize(): Promise<boolean> {
    let unavailable = 0;
    for (;;) {
      try {
        const requested = await attempts.requestCardAuthorization(subscriptionId);
        if (requested.kind === 'rejected') {
          firstOutcome = { kind: 'rejected', code: requested.code, message: requested.message };
          discarded = true;
          return false;
        }
        if (requested.kind === 'missing') {
          discarded = true;
          return false;
        }
        follow(requested.outbox);
        break;
      } catch (err) {
        const type = failureType(err);
        if (type === 'timeout' || type === 'invalid_response') {
          firstOutcome ??= { kind: type === 'timeout' ? 'provider_timeout' : 'provider_invalid' };
          const found = await patientActivities.reconcileCardAuthorization(subscriptionId);
          if (found === 'missing') {
            discarded = true;
            return false;
          }
          if (found === 'pending') break;
          continue; // never reached the provider: ask again with the same key
        }
        firstOutcome ??= { kind: 'provider_unavailable' };
        if (!(await sleepUntil(Date.now() + unavailableBackoffMs(++unavailable)))) return false;
      }
    }
    setStatus('pending');
    const expiresAt = Date.now() + input.authorizationExpirySeconds * 1000;
    for (;;) {
      if (cancelRequested()) return false;
      const remaining = expiresAt - Date.now();
      if (remaining <= 0) {
        const expired = await patientActivities.expireCardAuthorization(subscriptionId);
        if (expired === 'authorized') return true;
        if (expired === 'expired') await cancel({ reason: 'authorization_expired', notify: true });
        else discarded = true;
        return false;
      }
      await condition(() => providerEvent || cancelRequested(), remaining);
      if (providerEvent) {
        providerEvent = false;
        const checked = await patientActivities.checkCardAuthorization(subscriptionId);
        if (checked === 'authorized') return true;
        if (checked === 'missing') {
          discarded = true;
          return false;
        }
        // waiting, or declined on the page: the customer may still authorize until the expiry
      }
    }
  }

  /** Charges one invoice: first attempt now, then along the retry schedule while declined. */
  async function collect(invoiceId: string, attemptsMade: number, first: boolean): Promise<Collection> {
    let attempt = attemptsMade;
    let nextAt = Date.now();
    let unavailable = 0;
    for (;;) {
      if (!(await sleepUntil(nextAt))) return 'cancel';
      const request: ChargeRequest = {
        invoiceId,
        attempt: attempt + 1,
        retryDelayMs: retryDelayMillis(plan, attempt + 1, billingDaySeconds),
        discardOnReject: first && attempt === 0 && !input.needsAuthorization,
      };
      const outcome = await chargeOnce(request, first);
      if (outcome === 'unavailable') {
        nextAt = Date.now() + unavailableBackoffMs(++unavailable);
        continue;
      }
      unavailable = 0;
      switch (outcome.kind) {
        case 'paid':
          follow(outcome.outbox);
          live.attempts = request.attempt;
          live.nextAttemptAt = null;
          return 'paid';
        case 'declined':
          follow(outcome.outbox);
          attempt = request.attempt;
          live.attempts = attempt;
          live.nextAttemptAt = outcome.nextAttemptAt;
          if (outcome.nextAttemptAt === null) return 'exhausted';
          nextAt = Date.parse(outcome.nextAttemptAt);
          break;
        case 'void':
          follow(outcome.outbox);
          return 'cancel';
        case 'rejected':
          firstOutcome = { kind: 'rejected', code: outcome.code, message: outcome.message };
          return 'discarded';
        case 'missing':
        case 'not_found':
          return 'discarded';
      }
    }
  }

  /** One attempt, with its ambiguity resolved: the provider is asked until it is known. */
  async function chargeOnce(request: ChargeRequest, first: boolean): Promise<ChargeOutcome | 'unavailable'> {
    for (;;) {
      try {
        return await attempts.chargeInvoice(request);
      } catch (err) {
        const type = failureType(err);
        if (type !== undefined && NOTHING_CHARGED.includes(type)) {
          // Nothing was done: the same attempt is tried again later, with the same key.
          if (first) firstOutcome ??= { kind: 'provider_unavailable' };
          return 'unavailable';
        }
        // Anything else may have happened after the provider captured (a timeout, a garbled
        // answer, the database failing before the result was recorded): find out, never guess,
        // and before any cancellation may void the invoice.
        if (first) firstOutcome ??= { kind: type === 'invalid_response' ? 'provider_invalid' : 'provider_timeout' };
        const found = await patientActivities.reconcileInvoiceCharge(request);
        if (found.kind !== 'not_found') return found;
        // The provider never saw it: attempt again with the same idempotency key.
      }
    }
  }
}
