import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import { isDeadlineExceeded, isTemporalUnreachable, isUpdateAborted } from './grpcErrors';
import { temporalReachable } from './reachability';

/**
 * What Temporal answered a gateway's call that ended without a result, read by type (never by
 * message), in one place for every workflow's gateway:
 * - `already_started`: the workflow id names a closed run (REJECT_DUPLICATE): it is never started
 *   again, its record says what became of it;
 * - `update_refused`: the Update was refused (its validator, or its handler failed);
 * - `not_found`: no run to send the message to (closed, or never started);
 * - `update_aborted`: the Update was aborted with the workflow task carrying it (a worker died
 *   mid-task); nothing was decided, the same Update may be sent again;
 * - `timed_out`: the bounded wait ran out or the call was cancelled; what it did is unknown;
 * - `unreachable`: Temporal did not answer (unavailable, overloaded, namespace unknown yet).
 * Anything else is not an answer: it is thrown again.
 */
export type WorkflowAnswer =
  'already_started' | 'update_refused' | 'not_found' | 'update_aborted' | 'timed_out' | 'unreachable';

export function workflowAnswerOf(err: unknown): WorkflowAnswer {
  if (err instanceof WorkflowExecutionAlreadyStartedError) return 'already_started';
  if (err instanceof WorkflowUpdateFailedError) return 'update_refused';
  if (err instanceof WorkflowNotFoundError) return 'not_found';
  if (isUpdateAborted(err)) return 'update_aborted';
  if (isDeadlineExceeded(err)) return 'timed_out';
  if (isTemporalUnreachable(err)) return 'unreachable';
  throw err;
}

/** Whether an answer left the call without an outcome: nothing the caller can be told beyond "not yet". */
export const withoutOutcome = (answer: WorkflowAnswer): answer is 'update_aborted' | 'timed_out' | 'unreachable' =>
  answer === 'update_aborted' || answer === 'timed_out' || answer === 'unreachable';

/**
 * A call without an outcome, told apart: `no_answer` when Temporal is there (a busy or absent
 * worker; the outcome will follow), `unreachable` when it does not answer. Only a wait that ran
 * out (or an aborted Update) costs the one cheap RPC that tells them apart.
 */
export async function unansweredOutcome(
  client: Client,
  answer: 'update_aborted' | 'timed_out' | 'unreachable',
): Promise<'no_answer' | 'unreachable'> {
  if (answer === 'unreachable') return 'unreachable';
  return (await temporalReachable(client)) ? 'no_answer' : 'unreachable';
}

/** What a plain start came to: started (or already running: USE_EXISTING), or closed for good. */
export type StartAnswer = 'started' | 'closed';

/** A start's answer: a closed run (REJECT_DUPLICATE) is an answer, anything else is thrown. */
export async function startAnswer(start: () => Promise<unknown>): Promise<StartAnswer> {
  try {
    await start();
    return 'started';
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return 'closed';
    throw err;
  }
}

/**
 * What a revive came to: a run was started for the record, one is running already (left alone),
 * or none runs and this code cannot resume one where the record is (`skipped`; logged by the sweeper).
 */
export type ReviveAnswer = 'started' | 'running' | 'skipped';

/**
 * Starts a run for a live record unless one is running (decision 0059): the previous run may have
 * completed, failed, timed out or been terminated; ALLOW_DUPLICATE lets a new run take the id, and
 * USE_EXISTING makes a start racing another a no-op.
 */
export async function reviveAnswer(
  client: Client,
  workflowId: string,
  /** Null, or answering `skipped`: no run can be resumed where the record is. */
  start: (() => Promise<unknown>) | null,
): Promise<ReviveAnswer> {
  try {
    const { status } = await client.workflow.getHandle(workflowId).describe();
    if (status.name === 'RUNNING') return 'running';
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  if (!start) return 'skipped';
  return (await start()) === 'skipped' ? 'skipped' : 'started';
}

/** What a message sent to a workflow (a signal) came to: delivered, or no run to take it. */
export async function signalAnswer(send: () => Promise<void>): Promise<'delivered' | 'not_found'> {
  try {
    await send();
    return 'delivered';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'not_found';
    throw err;
  }
}

/** What an Update sent to a running workflow came to within the API's wait. */
export type UpdateAnswer<R> =
  | { kind: 'done'; result: R }
  /** Refused by its validator (or failed), or no run to take it. */
  | { kind: 'refused' | 'not_found' }
  /** Accepted by the workflow, not finished in time (workers busy or down): it will happen. */
  | { kind: 'accepted' }
  /** Nothing was decided (Temporal unreachable, or no worker took it): retry. */
  | { kind: 'no_answer' };

/** How long to wait before sending again an Update aborted with its workflow task. */
const ABORTED_RETRY_MS = 250;

/**
 * Sends an Update (bounded by `deadline`) and reads its answer: an Update aborted by a failed
 * workflow task is sent again while time is left (its update id is the same, so a retry attaches
 * to the one under way); `accept` resolves once the workflow accepted it.
 */
export async function updateAnswer<R>(
  client: Client,
  deadline: number,
  send: (accepted: () => void) => Promise<R>,
): Promise<UpdateAnswer<R>> {
  let accepted = false;
  for (;;) {
    try {
      const result = await client.withDeadline(deadline, () => send(() => (accepted = true)));
      return { kind: 'done', result };
    } catch (err) {
      const answer = workflowAnswerOf(err);
      if (answer === 'update_refused') return { kind: 'refused' };
      if (answer === 'not_found') return { kind: 'not_found' };
      if (answer === 'update_aborted' && Date.now() + ABORTED_RETRY_MS < deadline) {
        await new Promise((resolve) => setTimeout(resolve, ABORTED_RETRY_MS));
        continue;
      }
      if (withoutOutcome(answer)) return { kind: accepted ? 'accepted' : 'no_answer' };
      throw err;
    }
  }
}

/** A wait for a worker's hint that a record's outcome is committed (src/db/outcomeHints.ts). */
export interface HintWait<H> {
  readonly outcome: Promise<H>;
  cancel(): void;
}

/**
 * An Update's answer, or the worker's hint that its outcome is committed if that comes first
 * (src/db/outcomeHints.ts: the hint saves the workflow task that completes the Update). The
 * Update is sent either way; only the wait for its answer stops. The waiter is registered by the
 * caller before the Update is sent, so a hint cannot pass unseen.
 *
 * When the hint wins, the Update's call is left to finish on its own (its answer follows within
 * a workflow task, and the caller's deadline still bounds it) rather than cancelled: a cancelled
 * gRPC call builds an abort reason and two errors with their stacks, about a tenth of the API's
 * CPU per payment (bench/RESULTS.md), where the answer's decoding costs less.
 */
export async function firstOfAnswerAndHint<A, H>(ask: () => Promise<A>, hint: HintWait<H>): Promise<A | H> {
  const answer = ask();
  // Not awaited once the hint wins; its end, whatever it is, must not surface as unhandled.
  answer.catch(() => undefined);
  try {
    return await Promise.race([answer, hint.outcome]);
  } finally {
    hint.cancel();
  }
}
