import { ServiceError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { isDeadlineExceeded, isTemporalUnreachable, isUpdateAborted } from '../../src/temporal/grpcErrors';

/** A gRPC error as @grpc/grpc-js produces it (code, details, metadata). */
function grpcError(code: number, details: string): Error {
  return Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
}
const wrapped = (code: number, details = 'x') => new ServiceError('call failed', { cause: grpcError(code, details) });

/** Temporal's failures are told apart by type and gRPC code, never by their message. */
describe('Temporal error classification', () => {
  it.each([
    ['an Update RPC that timed out or was cancelled', new WorkflowUpdateRPCTimeoutOrCancelledError('Call cancelled')],
    ['DEADLINE_EXCEEDED', wrapped(4)],
    ['CANCELLED', wrapped(1)],
  ])('%s: no outcome (gave up waiting)', (_name, err) => {
    expect(isDeadlineExceeded(err)).toBe(true);
    expect(isTemporalUnreachable(err)).toBe(true);
  });

  it.each([
    ['UNAVAILABLE', 14],
    ['RESOURCE_EXHAUSTED', 8],
  ])('%s: unreachable or overloaded (503)', (_name, code) => {
    expect(isTemporalUnreachable(wrapped(code))).toBe(true);
    expect(isDeadlineExceeded(wrapped(code))).toBe(false);
  });

  it('FAILED_PRECONDITION on an Update: aborted with its workflow task, may be sent again', () => {
    const err = wrapped(9, 'Unable to perform workflow execution update due to unexpected workflow task failure');
    expect(isUpdateAborted(err)).toBe(true);
    expect(isTemporalUnreachable(err)).toBe(false);
  });

  it('recognises nothing by message text', () => {
    const lookalike = new Error('deadline exceeded; workflow execution already completed; unavailable');
    expect(isDeadlineExceeded(lookalike)).toBe(false);
    expect(isTemporalUnreachable(lookalike)).toBe(false);
    expect(isUpdateAborted(lookalike)).toBe(false);
    expect(isTemporalUnreachable(wrapped(5, 'not found'))).toBe(false);
  });
});
