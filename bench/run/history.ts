import { Client, Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { paymentWorkflowId } from '../../workflows/paymentApi';
import { refundWorkflowId } from '../../workflows/refundApi';
import type { RefundAttempt } from './refunds';

/**
 * One workflow's history as the Temporal server recorded it: event types with their offset from
 * the start in ms, and counts of workflow and activity tasks (server round trips).
 */
async function workflowHistory(address: string, workflowId: string) {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection });
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const events = history.events ?? [];
    const at = (e: (typeof events)[number]) =>
      Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);
    const t0 = events[0] ? at(events[0]) : 0;
    const name = (e: (typeof events)[number]) =>
      (proto.api.enums.v1.EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, '');
    const timeline = events.map((e) => `${name(e)} +${at(e) - t0}`);
    const count = (type: string) => events.filter((e) => name(e) === type).length;
    return {
      workflowId,
      events: events.length,
      workflowTasks: count('WORKFLOW_TASK_COMPLETED'),
      activities: count('ACTIVITY_TASK_SCHEDULED'),
      activityTypes: events
        .filter((e) => name(e) === 'ACTIVITY_TASK_SCHEDULED')
        .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?'),
      updateCompletedAtMs: (() => {
        const e = events.find((x) => name(x) === 'WORKFLOW_EXECUTION_UPDATE_COMPLETED');
        return e ? at(e) - t0 : null;
      })(),
      totalMs: events.length ? at(events[events.length - 1]!) - t0 : 0,
      timeline,
    };
  } finally {
    await connection.close();
  }
}

export type WorkflowHistory = Awaited<ReturnType<typeof workflowHistory>> | { error: string };
export type RefundHistory = (Awaited<ReturnType<typeof workflowHistory>> & { answerMs: number }) | { error: string };

/**
 * What one payment and one refund cost in Temporal round trips: the history of the middle one
 * answered in the quietest run (one connection when there was one).
 */
export async function sampleHistories(
  address: string,
  paymentIds: string[],
  refunds: RefundAttempt[],
  fallbackPaymentId: string,
): Promise<{ payment: WorkflowHistory; refund?: RefundHistory }> {
  const paymentId = paymentIds[Math.floor(paymentIds.length / 2)] ?? fallbackPaymentId;
  const payment = await workflowHistory(address, paymentWorkflowId(paymentId)).catch((err: unknown) => ({
    error: (err as Error).message,
  }));
  const answered = refunds.filter((a) => a.refundId && !a.error);
  const sample = answered[Math.floor(answered.length / 2)];
  const refund = sample?.refundId
    ? await workflowHistory(address, refundWorkflowId(sample.refundId))
        .then((h) => ({ ...h, answerMs: Number(sample.ms.toFixed(1)) }))
        .catch((err: unknown) => ({ error: (err as Error).message }))
    : undefined;
  return { payment, ...(refund ? { refund } : {}) };
}
