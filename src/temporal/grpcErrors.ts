import {
  isGrpcServiceError,
  NamespaceNotFoundError,
  ServiceError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import { google, temporal } from '@temporalio/proto';

// gRPC status codes (google.golang.org/grpc/codes), as the Temporal client reports them.
const CANCELLED = 1;
const DEADLINE_EXCEEDED = 4;
const NOT_FOUND = 5;
const RESOURCE_EXHAUSTED = 8;
const FAILED_PRECONDITION = 9;
const UNAVAILABLE = 14;

/** The gRPC error behind a Temporal client error (the client wraps it in a typed error). */
function grpcError(err: unknown) {
  const grpc = err instanceof ServiceError || err instanceof WorkflowUpdateRPCTimeoutOrCancelledError ? err.cause : err;
  return isGrpcServiceError(grpc) ? grpc : undefined;
}

function grpcCode(err: unknown): number | undefined {
  return grpcError(err)?.code;
}

const NAMESPACE_NOT_FOUND = 'temporal.api.errordetails.v1.NamespaceNotFoundFailure';
const MULTI_OPERATION_FAILURE = 'temporal.api.errordetails.v1.MultiOperationExecutionFailure';
const typeName = (typeUrl: string | null | undefined) => (typeUrl ?? '').replace(/^.*\//, '');

/**
 * The failure types in a gRPC error's status details, including those of each operation of an
 * Update-with-Start (the client rethrows the failing operation's code but keeps the details).
 */
function detailTypes(err: unknown): string[] {
  const grpc = grpcError(err);
  const bin = grpc?.metadata?.get?.('grpc-status-details-bin')?.[0];
  if (!Buffer.isBuffer(bin)) return [];
  try {
    const types: string[] = [];
    for (const detail of google.rpc.Status.decode(bin).details ?? []) {
      types.push(typeName(detail.type_url));
      if (typeName(detail.type_url) === MULTI_OPERATION_FAILURE && detail.value) {
        const { statuses } = temporal.api.errordetails.v1.MultiOperationExecutionFailure.decode(detail.value);
        for (const status of statuses ?? []) for (const d of status.details ?? []) types.push(typeName(d.type_url));
      }
    }
    return types;
  } catch {
    return [];
  }
}

/**
 * The server does not know the namespace: misconfiguration, or (seen in the chaos run) a
 * frontend just restarted whose namespace registry has not loaded yet. Nothing was done.
 */
export function isNamespaceNotFound(err: unknown): boolean {
  if (err instanceof NamespaceNotFoundError) return true;
  return grpcCode(err) === NOT_FOUND && detailTypes(err).includes(NAMESPACE_NOT_FOUND);
}

/**
 * The call gave up waiting: our bounded wait ran out or the RPC was cancelled (a slow or absent
 * worker, a restarting server, a process killed mid-call). What it did is unknown; nothing the
 * caller can be told beyond "not yet".
 */
export function isDeadlineExceeded(err: unknown): boolean {
  if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return true;
  const code = grpcCode(err);
  return code === DEADLINE_EXCEEDED || code === CANCELLED;
}

/**
 * Any Temporal call that ended without an outcome: unreachable, overloaded (RESOURCE_EXHAUSTED),
 * gave up waiting, or a server that does not know the namespace (yet). Answered 503, never 500:
 * the caller may retry with the same ids.
 */
export function isTemporalUnreachable(err: unknown): boolean {
  if (isDeadlineExceeded(err) || isNamespaceNotFound(err)) return true;
  const code = grpcCode(err);
  return code === UNAVAILABLE || code === RESOURCE_EXHAUSTED;
}

/**
 * The server aborted an Update before it had an outcome because the workflow task carrying it
 * failed or timed out (e.g. a worker died mid-task). Nothing was decided: the same Update (same
 * update id) may be sent again.
 */
export function isUpdateAborted(err: unknown): boolean {
  return grpcCode(err) === FAILED_PRECONDITION;
}
