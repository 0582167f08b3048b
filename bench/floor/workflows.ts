import {
  allHandlersFinished,
  condition,
  defineUpdate,
  proxyLocalActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type { FloorActivities } from './activities';

/**
 * The floor's workflows: what the product's workflows cost in Temporal alone, with no business
 * work. Bundled once by bench/floor/stack.ts (bundleWorkflowCode) and run by bench/floor/worker.ts.
 * Only @temporalio/workflow is imported: the bundle holds nothing else.
 */

const { noop, charge, refund } = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '10 seconds' });

/** The Update the client sends with Update-with-Start, like the token POST's `submitPayment`. */
export const floorPingUpdate = defineUpdate<string>('floorPing');

/** On its Update: one no-op local activity, then the answer; the run closes once the handler is done. */
export async function floorUpdateWorkflow(): Promise<void> {
  let answered = false;
  setHandler(floorPingUpdate, async () => {
    await noop();
    answered = true;
    return 'pong';
  });
  await condition(() => answered && allHandlersFinished());
}

/** The work floor's Update: its answer is the payment's status. */
export const floorChargeUpdate = defineUpdate<string>('floorCharge');

/**
 * The work floor: the bare floor's shape (Update-with-Start, one local activity, the answer), with
 * the local activity doing a token payment's required work on the row the client committed first
 * (bench/floor/activities.ts, `charge`).
 */
export async function floorWorkWorkflow(paymentId: string): Promise<void> {
  let answered = false;
  setHandler(floorChargeUpdate, async () => {
    const status = await charge(paymentId);
    answered = true;
    return status;
  });
  await condition(() => answered && allHandlersFinished());
}

/** The refund work floor's Update: its answer is the refund's status. */
export const floorRefundUpdate = defineUpdate<string>('floorRefund');

/**
 * The refund work floor: the same shape again, the local activity doing a refund's required work
 * on the refund row the client committed first (bench/floor/activities.ts, `refund`).
 */
export async function floorRefundWorkflow(refundId: string): Promise<void> {
  let answered = false;
  setHandler(floorRefundUpdate, async () => {
    const status = await refund(refundId);
    answered = true;
    return status;
  });
  await condition(() => answered && allHandlersFinished());
}

/** Sleeps until `dueAtMs` (epoch ms, the same instant for every run of the storm), then one no-op local activity. */
export async function floorTimerWorkflow(dueAtMs: number): Promise<void> {
  const wait = dueAtMs - Date.now();
  if (wait > 0) await sleep(wait);
  await noop();
}
