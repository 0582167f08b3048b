import { ServiceError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { NamespaceNotFoundError } from '@temporalio/client';
import { google, temporal } from '@temporalio/proto';
import {
  isDeadlineExceeded,
  isNamespaceNotFound,
  isTemporalUnreachable,
  isUpdateAborted,
} from '../../src/temporal/grpcErrors';

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

  it('NOT_FOUND of an Update-with-Start whose failing operation names the namespace: unreachable (503)', () => {
    const any = (typeUrl: string, value: Uint8Array) => ({ type_url: `type.googleapis.com/${typeUrl}`, value });
    const namespaceNotFound = any(
      'temporal.api.errordetails.v1.NamespaceNotFoundFailure',
      temporal.api.errordetails.v1.NamespaceNotFoundFailure.encode({ namespace: 'default' }).finish(),
    );
    const multi = temporal.api.errordetails.v1.MultiOperationExecutionFailure.encode({
      statuses: [{ code: 5, message: 'Namespace default is not found.', details: [namespaceNotFound] }, { code: 10 }],
    }).finish();
    const status = google.rpc.Status.encode({
      code: 5,
      details: [any('temporal.api.errordetails.v1.MultiOperationExecutionFailure', multi)],
    }).finish();
    const err = Object.assign(new Error('Namespace default is not found.'), {
      code: 5,
      details: '',
      metadata: { get: (key: string) => (key === 'grpc-status-details-bin' ? [Buffer.from(status)] : []) },
    });
    expect(isNamespaceNotFound(err)).toBe(true);
    expect(isTemporalUnreachable(err)).toBe(true);
    expect(isTemporalUnreachable(new NamespaceNotFoundError('default'))).toBe(true);
    // The same code without that detail (e.g. a workflow not found) is not "unreachable".
    const plain = Object.assign(new Error('not found'), { code: 5, details: '', metadata: { get: () => [] } });
    expect(isNamespaceNotFound(plain)).toBe(false);
  });
});
