import { createHash } from 'node:crypto';
import type { Payload } from '@temporalio/common';
import {
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateStage,
  type Client,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { Plan } from '../rules/subscriptionPlan';
import { subscriptionWorkflowSummary } from '../rules/workflowSummaries';
import { subscriptionWorkflow } from '../../workflows/subscription';
import {
  cancelSubscriptionUpdate,
  customerCardSignal,
  providerInvoiceEventSignal,
  providerSubscriptionEventSignal,
  subscriptionStartedUpdate,
  subscriptionWorkflowId,
  testClockTimeUpdate,
  updatePaymentMethodUpdate,
  isCancelRequest,
  type CancelRequest,
  type PaymentMethodOutcome,
  type PaymentMethodRequest,
  type StartOutcome,
  type SubscriptionWorkflowInput,
} from '../../workflows/subscriptionApi';
import { ExternalIdKey, MerchantIdKey, SubscriptionStatusKey } from '../../workflows/searchAttributes';
import { isTemporalUnreachable } from './grpcErrors';
import { temporalReachable } from './reachability';
import { decodeHistoryPayloads } from './payloadCodec';
import { subscriptionTaskQueue } from './taskQueues';
import { subscriptionRevivalOf, type SubscriptionRecordForRevival } from '../rules/subscriptionCollection';
import {
  reviveAnswer,
  signalAnswer,
  startAnswer,
  updateAnswer,
  withoutOutcome,
  workflowAnswerOf,
  type ReviveAnswer,
  type StartAnswer,
} from './workflowAnswers';

/** The subscription a workflow is started for, with its plan (its phases and retry schedule). */
export interface SubscriptionStart {
  id: string;
  merchantId: string;
  externalId: string;
  currency: string;
  environment?: string;
  cardToken: string | null;
  callbackUrl: string | null;
  plan: Plan;
  /** The test clock it lives on (decision 0090) and the clock's time at its create. */
  testClock?: { id: string } | null;
  clockCreatedAt?: Date | null;
}

/**
 * A billing day and the authorization expiry on a test clock: 86,400 s of clock time, whatever
 * BILLING_DAY_SECONDS says (PRODUCT.md "Test clocks").
 */
export const CLOCK_DAY_SECONDS = 86_400;

export interface SubscriptionGatewaySettings {
  /** The main task queue (TEMPORAL_TASK_QUEUE): the workflow runs on its subscription queue. */
  taskQueue: string;
  billingDaySeconds: number;
  subscriptionAuthorizationExpirySeconds: number;
  callbackRetryInitialSeconds: number;
  /** Continue-as-new threshold for new subscriptions' workflows (tests lower it). */
  historyEventLimit?: number;
  /** WORKFLOW_STUCK_AFTER_SECONDS (absent: an hour; see workflows/untilKnown.ts). */
  stuckAfterSeconds?: number;
  /** Bounded wait for an answer (the first outcome, a cancel, a card update); only the API waits. */
  paymentWaitMs?: number;
}

/** What a cancel request came to within the API's wait. */
export type CancelResult =
  /** The workflow cancelled it (or found it cancelled): read PostgreSQL. */
  | 'done'
  /** The workflow is closed: the record says what became of it. */
  | 'closed'
  /** Accepted by the workflow, not finished in time (workers busy or down): it will happen. */
  | 'accepted'
  /** Nothing was decided (Temporal unreachable, or no worker took it): retry. */
  | 'no_answer';

/** What a card update came to within the API's wait. */
export type PaymentMethodResult =
  | PaymentMethodOutcome
  /** Refused by the workflow's validator (neither active nor past_due), or its workflow is closed. */
  | 'refused'
  /** Accepted by the workflow, not finished in time: it will happen. */
  | 'accepted'
  /** Nothing was decided (Temporal unreachable, or no worker took it): retry. */
  | 'no_answer';

/** How a subscription's workflow is started: its id, input, policies, search attributes and UI summary. */
function startOptions(
  subscription: SubscriptionStart,
  settings: SubscriptionGatewaySettings,
): WorkflowStartOptions<typeof subscriptionWorkflow> & { workflowIdConflictPolicy: 'USE_EXISTING' } {
  const clock = subscription.testClock && subscription.clockCreatedAt ? subscription.testClock : null;
  const input: SubscriptionWorkflowInput = {
    subscriptionId: subscription.id,
    merchantId: subscription.merchantId,
    externalId: subscription.externalId,
    plan: subscription.plan,
    needsAuthorization: subscription.cardToken === null,
    billingDaySeconds: clock ? CLOCK_DAY_SECONDS : settings.billingDaySeconds,
    authorizationExpirySeconds: clock ? CLOCK_DAY_SECONDS : settings.subscriptionAuthorizationExpirySeconds,
    ...(clock ? { testClock: { id: clock.id, startMs: subscription.clockCreatedAt!.getTime() } } : {}),
    callbackRetryInitialSeconds: settings.callbackRetryInitialSeconds,
    callbacks: subscription.callbackUrl !== null,
    ...(settings.historyEventLimit ? { historyEventLimit: settings.historyEventLimit } : {}),
    ...(settings.stuckAfterSeconds ? { stuckAfterSeconds: settings.stuckAfterSeconds } : {}),
  };
  return {
    workflowId: subscriptionWorkflowId(subscription.id),
    taskQueue: subscriptionTaskQueue(settings.taskQueue),
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    // One execution chain per subscription: once closed (cancelled), never started again.
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    typedSearchAttributes: [
      { key: MerchantIdKey, value: subscription.merchantId },
      { key: ExternalIdKey, value: subscription.externalId },
      { key: SubscriptionStatusKey, value: 'created' },
    ],
    // Not the card token: only whether the merchant gave one.
    ...subscriptionWorkflowSummary({
      id: subscription.id,
      merchantId: subscription.merchantId,
      externalId: subscription.externalId,
      currency: subscription.currency,
      plan: subscription.plan,
      ...(subscription.environment ? { environment: subscription.environment } : {}),
      needsAuthorization: input.needsAuthorization,
      callbacks: input.callbacks,
    }),
  };
}

/**
 * The API's and the sweeper's side of the subscription workflow, in one place: how it is started
 * and asked, and how Temporal's answers are read (workflowAnswers.ts).
 */
export function createSubscriptionGateway(deps: { client: Client; settings: SubscriptionGatewaySettings }) {
  const { client, settings } = deps;
  const waitMs = settings.paymentWaitMs ?? 0;
  const handle = (subscriptionId: string) =>
    client.workflow.getHandle<typeof subscriptionWorkflow>(subscriptionWorkflowId(subscriptionId));

  async function closedOutcome(subscriptionId: string): Promise<StartOutcome | 'no_answer'> {
    try {
      const result = await client.withDeadline(Date.now() + waitMs, () => handle(subscriptionId).result());
      return result.firstOutcome ?? { kind: 'settled' };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return { kind: 'settled' };
      if (isTemporalUnreachable(err)) return 'no_answer';
      throw err;
    }
  }

  /**
   * A cancel request the subscription's last run accepted (an Update in its history): a DELETE
   * answered "accepted, takes effect as soon as the workers resume" whose run then ended before
   * cancelling (decision 0061). Null: none, or no run at all.
   */
  async function cancelAcceptedByLastRun(subscriptionId: string): Promise<CancelRequest | null> {
    let history;
    try {
      history = await handle(subscriptionId).fetchHistory();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return null;
      throw err;
    }
    for (const event of history.events ?? []) {
      const input = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
      if (input?.name !== cancelSubscriptionUpdate.name) continue;
      // Through the client's codec first: the history holds the payloads encrypted (decision 0078).
      const [req] = await decodeHistoryPayloads(
        client.workflow.options.loadedDataConverter,
        (input.args?.payloads ?? []) as Payload[],
      );
      if (isCancelRequest(req)) return req;
    }
    return null;
  }

  return {
    workflowId: subscriptionWorkflowId,

    /**
     * A live subscription whose workflow ended (the sweeper; decisions 0059, 0061) gets a new run,
     * taken up where its record says (`read`, asked only once no run is found running, so a run
     * that ended just before has written all it will): `created` starts over; otherwise the run
     * resumes at the record's period, collecting its invoice on from where the record shows it
     * (subscriptionRevivalOf). A running one is left alone; a record no run can resume from is
     * `skipped`. `cancel`: the merchant's DELETE that found no run, the new run's first message.
     */
    revive(
      subscription: SubscriptionStart,
      read: () => Promise<SubscriptionRecordForRevival | null>,
      cancelNow?: CancelRequest,
      /** On a test clock: the clock's time, the revival's now (its record is in clock time). */
      clockNowMs?: number,
    ): Promise<ReviveAnswer> {
      const options = startOptions(subscription, settings);
      const [input] = options.args;
      // A clock subscription is revived only by its clock's advance, at the clock's time.
      if (input.testClock && clockNowMs === undefined) return Promise.resolve('skipped');
      const nowMs = input.testClock ? clockNowMs! : Date.now();
      return reviveAnswer(client, subscriptionWorkflowId(subscription.id), async () => {
        const record = await read();
        const from =
          record &&
          subscriptionRevivalOf(
            record,
            {
              plan: subscription.plan,
              billingDaySeconds: input.billingDaySeconds,
              authorizationExpirySeconds: input.authorizationExpirySeconds,
            },
            nowMs,
          );
        if (!from) return 'skipped';
        const revived: typeof options = {
          ...options,
          ...(from.status !== 'created'
            ? {
                args: [
                  {
                    ...input,
                    ...(from.needsAuthorization !== undefined ? { needsAuthorization: from.needsAuthorization } : {}),
                    resume: {
                      status: from.status,
                      periodIndex: from.periodIndex,
                      periodStartMs: from.periodStartMs,
                      runs: 0,
                      ...(from.collection ? { collection: from.collection } : {}),
                      ...(from.authorization ? { authorization: from.authorization } : {}),
                      ...(input.testClock ? { clockNowMs: nowMs } : {}),
                    },
                  },
                ],
                typedSearchAttributes: [
                  { key: MerchantIdKey, value: subscription.merchantId },
                  { key: ExternalIdKey, value: subscription.externalId },
                  { key: SubscriptionStatusKey, value: from.status },
                ],
              }
            : {}),
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        };
        // A cancellation the lost run accepted (the merchant was told it takes effect) is the new
        // run's first message: its handler takes it before any step, so nothing is charged.
        // So is a DELETE recorded in PostgreSQL whose Update no run took (decision 0076).
        const cancel = cancelNow ?? (await cancelAcceptedByLastRun(subscription.id)) ?? record?.cancelRequest ?? null;
        if (!cancel) return client.workflow.start(subscriptionWorkflow, revived);
        return client.workflow.startUpdateWithStart(cancelSubscriptionUpdate, {
          args: [cancel],
          updateId: cancelUpdateId(cancel),
          waitForStage: WorkflowUpdateStage.ACCEPTED,
          startWorkflowOperation: new WithStartWorkflowOperation(subscriptionWorkflow, revived),
        });
      });
    },

    /**
     * A test clock's advance reached `nowMs` (decision 0090): the subscription does what is due
     * and answers once quiet, with its next due time in clock time; `again`: its run was handing
     * over (ask again); `closed`: no run (cancelled, or a run that ended and the advance revives).
     * A run that refuses the Update (not on a clock): nothing due. Temporal unreachable: thrown
     * (the clock's activity retries; the Update is idempotent).
     */
    async clockTime(subscriptionId: string, nowMs: number): Promise<{ nextDueMs: number | null } | 'again' | 'closed'> {
      try {
        const answer = await handle(subscriptionId).executeUpdate(testClockTimeUpdate, { args: [{ nowMs }] });
        return 'again' in answer ? 'again' : answer;
      } catch (err) {
        const answer = workflowAnswerOf(err);
        // No run to ask: the subscription's record says whether one should be (the advance revives it).
        if (answer === 'not_found') return 'closed';
        if (answer === 'update_refused') return { nextDueMs: null };
        if (answer === 'update_aborted') return 'again';
        throw err;
      }
    },

    /** Starts the subscription's workflow (the sweeper); a running one is left alone, a closed one never started again. */
    start(subscription: SubscriptionStart): Promise<StartAnswer> {
      return startAnswer(() => client.workflow.start(subscriptionWorkflow, startOptions(subscription, settings)));
    },

    /**
     * After the commit that recorded the subscription: starts its workflow unless it runs already
     * and waits (bounded) for the first outcome, in one round trip (Update-with-Start).
     */
    async startAndAwaitFirstOutcome(subscription: SubscriptionStart): Promise<StartOutcome | 'no_answer'> {
      const op = new WithStartWorkflowOperation(subscriptionWorkflow, startOptions(subscription, settings));
      try {
        return await client.withDeadline(Date.now() + waitMs, () =>
          client.workflow.executeUpdateWithStart(subscriptionStartedUpdate, { startWorkflowOperation: op }),
        );
      } catch (err) {
        const answer = workflowAnswerOf(err);
        // Refused by the validator: the subscription left `created` already.
        if (answer === 'update_refused') return { kind: 'settled' };
        // The workflow is closed (e.g. it discarded a refused token): its result says how it began.
        if (answer === 'already_started') return closedOutcome(subscription.id);
        if (withoutOutcome(answer)) return 'no_answer';
        throw err;
      }
    },

    /**
     * Cancels through the workflow's Update, waiting (bounded) for its outcome. The update id is
     * derived from the request, so a retried DELETE attaches to the Update already under way
     * instead of stacking another; an Update aborted by a failed workflow task is sent again.
     */
    async cancel(subscriptionId: string, req: CancelRequest): Promise<CancelResult> {
      const answer = await updateAnswer(client, Date.now() + waitMs, async (accepted) => {
        const update = await handle(subscriptionId).startUpdate(cancelSubscriptionUpdate, {
          args: [req],
          updateId: cancelUpdateId(req),
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        });
        accepted();
        await update.result();
      });
      switch (answer.kind) {
        // Refused by the validator (cancelled already): nothing to apply.
        case 'done':
        case 'refused':
          return 'done';
        case 'not_found':
          return 'closed';
        default:
          return answer.kind;
      }
    },

    /**
     * Replaces the subscription's card through the workflow's Update (`updateId` from
     * paymentMethodUpdateId: the subscription's state as the API read it, and the request),
     * waiting (bounded) for its outcome. A retried request against the same subscription state
     * attaches to the Update under way; an aborted one is sent again.
     */
    async updatePaymentMethod(
      subscriptionId: string,
      req: PaymentMethodRequest,
      readAt: string,
    ): Promise<PaymentMethodResult> {
      const answer = await updateAnswer(client, Date.now() + waitMs, async (accepted) => {
        const update = await handle(subscriptionId).startUpdate(updatePaymentMethodUpdate, {
          args: [req],
          updateId: paymentMethodUpdateId(readAt, req),
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        });
        accepted();
        return await update.result();
      });
      switch (answer.kind) {
        case 'done':
          return answer.result;
        case 'not_found':
          return 'refused';
        default:
          return answer.kind;
      }
    },

    /** The provider's webhook: the workflow asks the provider itself. A closed run has settled already. */
    providerEvent(subscriptionId: string): Promise<'delivered' | 'not_found'> {
      return signalAnswer(() => handle(subscriptionId).signal(providerSubscriptionEventSignal));
    },

    /**
     * The provider's webhook about one of the subscription's invoice charges (decision 0060): the
     * workflow asks about the waiting attempt itself.
     */
    invoiceEvent(subscriptionId: string): Promise<'delivered' | 'not_found'> {
      return signalAnswer(() => handle(subscriptionId).signal(providerInvoiceEventSignal));
    },

    /**
     * A new usable card of the subscription's customer (decision 0088): a run waiting for a new
     * card charges it at once. A closed run has nothing to charge.
     */
    customerCard(subscriptionId: string, paymentMethodId: string): Promise<'delivered' | 'not_found'> {
      return signalAnswer(() => handle(subscriptionId).signal(customerCardSignal, { paymentMethodId }));
    },

    /** Whether Temporal answers at all (after a wait without an outcome): see temporalReachable. */
    reachable: () => temporalReachable(client),
  };
}

export type SubscriptionGateway = ReturnType<typeof createSubscriptionGateway>;

/** One Update per subscription and request intent (reason, notify): retries attach to it. */
export function cancelUpdateId(req: CancelRequest): string {
  const intent = createHash('sha256')
    .update(JSON.stringify([req.reason, req.notify]))
    .digest('hex');
  return `cancel-${intent.slice(0, 24)}`;
}

/**
 * One Update per subscription state and request: the subscription's `updatedAt` as the API read
 * it, and the token (or the hosted page). A retry of a request, or two at once, against the same
 * state attach to one Update; once the card changed (updatedAt moves) the same request is a new
 * Update, which finds that card already in place and changes nothing. Temporal keeps Update ids
 * per run only, so the workflow's state, not the id, is what makes a repeat harmless.
 */
export function paymentMethodUpdateId(updatedAt: string, req: PaymentMethodRequest): string {
  const intent = createHash('sha256')
    .update(JSON.stringify([updatedAt, req.cardToken ?? null]))
    .digest('hex');
  return `payment-method-${intent.slice(0, 32)}`;
}
