import {
  ServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import { signalAnswer, startAnswer, workflowAnswerOf, withoutOutcome } from '../../src/temporal/workflowAnswers';

/** A gRPC error as @grpc/grpc-js produces it (code, details, metadata). */
function grpcError(code: number, details: string): Error {
  return Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
}
const wrapped = (code: number, details = 'x') => new ServiceError('call failed', { cause: grpcError(code, details) });

/** The one reading of Temporal's answers every gateway shares (src/temporal/workflowAnswers.ts). */
describe("Temporal's answers, as the gateways read them", () => {
  it.each([
    ['a closed run (REJECT_DUPLICATE)', new WorkflowExecutionAlreadyStartedError('x', 'wf', 'type'), 'already_started'],
    ['an Update refused', new WorkflowUpdateFailedError('refused', undefined), 'update_refused'],
    ['no run', new WorkflowNotFoundError('gone', 'wf', undefined), 'not_found'],
    ['an Update aborted with its workflow task', wrapped(9), 'update_aborted'],
    ['a wait that ran out', new WorkflowUpdateRPCTimeoutOrCancelledError('Call cancelled'), 'timed_out'],
    ['DEADLINE_EXCEEDED', wrapped(4), 'timed_out'],
    ['UNAVAILABLE', wrapped(14), 'unreachable'],
    ['RESOURCE_EXHAUSTED', wrapped(8), 'unreachable'],
  ])('%s', (_name, err, answer) => {
    expect(workflowAnswerOf(err)).toBe(answer);
  });

  it('throws anything else again (never read by message)', () => {
    const lookalike = new Error('workflow execution already started; unavailable');
    expect(() => workflowAnswerOf(lookalike)).toThrow(lookalike);
    expect(() => workflowAnswerOf(wrapped(5, 'not found'))).toThrow();
  });

  it('tells the answers without an outcome apart', () => {
    expect(['update_aborted', 'timed_out', 'unreachable'].every((a) => withoutOutcome(a as never))).toBe(true);
    expect(['already_started', 'update_refused', 'not_found'].some((a) => withoutOutcome(a as never))).toBe(false);
  });

  it('a start of a closed run is an answer; a signal to no run is one too', async () => {
    const closed = new WorkflowExecutionAlreadyStartedError('x', 'wf', 'type');
    await expect(startAnswer(() => Promise.reject(closed))).resolves.toBe('closed');
    await expect(startAnswer(() => Promise.resolve())).resolves.toBe('started');
    await expect(startAnswer(() => Promise.reject(wrapped(14)))).rejects.toBeInstanceOf(ServiceError);
    const gone = new WorkflowNotFoundError('gone', 'wf', undefined);
    await expect(signalAnswer(() => Promise.reject(gone))).resolves.toBe('not_found');
    await expect(signalAnswer(() => Promise.resolve())).resolves.toBe('delivered');
  });
});
