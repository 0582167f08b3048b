import { createHash } from 'node:crypto';
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateStage,
  type Client,
} from '@temporalio/client';
import { subscriptionWorkflow } from '../../workflows/subscription';
import {
  cancelSubscriptionUpdate,
  subscriptionStartedUpdate,
  subscriptionWorkflowId,
  updatePaymentMethodUpdate,
  type CancelRequest,
  type PaymentMethodOutcome,
  type PaymentMethodRequest,
  type StartOutcome,
} from '../../workflows/subscriptionApi';
import { isTemporalUnreachable, isUpdateAborted } from './grpcErrors';
import { subscriptionWorkflowStartOptions } from './subscriptionWorkflowOptions';

type StartInput = Parameters<typeof subscriptionWorkflowStartOptions>[0];
type StartSettings = Parameters<typeof subscriptionWorkflowStartOptions>[1];

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

/**
 * The API's side of the subscription workflow, in one place: how it is started and asked, and
 * how Temporal's answers are read (by type, never by message).
 */
export class SubscriptionGateway {
  constructor(
    private readonly client: Client,
    private readonly settings: StartSettings & { waitMs: number },
  ) {}

  private handle(subscriptionId: string) {
    return this.client.workflow.getHandle<typeof subscriptionWorkflow>(subscriptionWorkflowId(subscriptionId));
  }

  /**
   * After the commit that recorded the subscription: starts its workflow unless it runs already
   * and waits (bounded) for the first outcome, in one round trip (Update-with-Start).
   */
  async startAndAwaitFirstOutcome(subscription: StartInput): Promise<StartOutcome | 'no_answer'> {
    const op = new WithStartWorkflowOperation(
      subscriptionWorkflow,
      subscriptionWorkflowStartOptions(subscription, this.settings),
    );
    try {
      return await this.client.withDeadline(Date.now() + this.settings.waitMs, () =>
        this.client.workflow.executeUpdateWithStart(subscriptionStartedUpdate, { startWorkflowOperation: op }),
      );
    } catch (err) {
      // Refused by the validator: the subscription left `created` already.
      if (err instanceof WorkflowUpdateFailedError) return { kind: 'settled' };
      // The workflow is closed (e.g. it discarded a refused token): its result says how it began.
      if (err instanceof WorkflowExecutionAlreadyStartedError) return this.closedOutcome(subscription.id);
      if (isTemporalUnreachable(err) || isUpdateAborted(err)) return 'no_answer';
      throw err;
    }
  }

  private async closedOutcome(subscriptionId: string): Promise<StartOutcome | 'no_answer'> {
    try {
      const result = await this.client.withDeadline(Date.now() + this.settings.waitMs, () =>
        this.handle(subscriptionId).result(),
      );
      return result.firstOutcome ?? { kind: 'settled' };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return { kind: 'settled' };
      if (isTemporalUnreachable(err)) return 'no_answer';
      throw err;
    }
  }

  /**
   * Cancels through the workflow's Update, waiting (bounded) for its outcome. The update id is
   * derived from the request, so a retried DELETE attaches to the Update already under way
   * instead of stacking another; an Update aborted by a failed workflow task is sent again.
   */
  async cancel(subscriptionId: string, req: CancelRequest): Promise<CancelResult> {
    const deadline = Date.now() + this.settings.waitMs;
    let accepted = false;
    for (;;) {
      try {
        await this.client.withDeadline(deadline, async () => {
          const update = await this.handle(subscriptionId).startUpdate(cancelSubscriptionUpdate, {
            args: [req],
            updateId: cancelUpdateId(req),
            waitForStage: WorkflowUpdateStage.ACCEPTED,
          });
          accepted = true;
          await update.result();
        });
        return 'done';
      } catch (err) {
        // Refused by the validator (cancelled already): nothing to apply.
        if (err instanceof WorkflowUpdateFailedError) return 'done';
        if (err instanceof WorkflowNotFoundError) return 'closed';
        if (isUpdateAborted(err) && Date.now() + 250 < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 250));
          continue;
        }
        if (isTemporalUnreachable(err) || isUpdateAborted(err)) return accepted ? 'accepted' : 'no_answer';
        throw err;
      }
    }
  }

  /**
   * Replaces the subscription's card through the workflow's Update (`updateId` from
   * paymentMethodUpdateId), waiting (bounded) for its outcome. A retried request against the
   * same subscription state attaches to the Update under way; an aborted one is sent again.
   */
  async updatePaymentMethod(
    subscriptionId: string,
    req: PaymentMethodRequest,
    updateId: string,
  ): Promise<PaymentMethodResult> {
    const deadline = Date.now() + this.settings.waitMs;
    let accepted = false;
    for (;;) {
      try {
        return await this.client.withDeadline(deadline, async () => {
          const update = await this.handle(subscriptionId).startUpdate(updatePaymentMethodUpdate, {
            args: [req],
            updateId,
            waitForStage: WorkflowUpdateStage.ACCEPTED,
          });
          accepted = true;
          return await update.result();
        });
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError || err instanceof WorkflowNotFoundError) return 'refused';
        if (isUpdateAborted(err) && Date.now() + 250 < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 250));
          continue;
        }
        if (isTemporalUnreachable(err) || isUpdateAborted(err)) return accepted ? 'accepted' : 'no_answer';
        throw err;
      }
    }
  }
}

/** What a card update came to within the API's wait. */
export type PaymentMethodResult =
  | PaymentMethodOutcome
  /** Refused by the workflow's validator (neither active nor past_due), or its workflow is closed. */
  | 'refused'
  /** Accepted by the workflow, not finished in time: it will happen. */
  | 'accepted'
  /** Nothing was decided (Temporal unreachable, or no worker took it): retry. */
  | 'no_answer';

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
