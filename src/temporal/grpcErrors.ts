import { isGrpcServiceError, ServiceError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';

// gRPC status codes (google.golang.org/grpc/codes), as the Temporal client reports them.
const CANCELLED = 1;
const DEADLINE_EXCEEDED = 4;
const RESOURCE_EXHAUSTED = 8;
const FAILED_PRECONDITION = 9;
const UNAVAILABLE = 14;

/** The gRPC error behind a Temporal client error (the client wraps it in a typed error). */
function grpcCode(err: unknown): number | undefined {
  const grpc = err instanceof ServiceError || err instanceof WorkflowUpdateRPCTimeoutOrCancelledError ? err.cause : err;
  return isGrpcServiceError(grpc) ? grpc.code : undefined;
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
 * or gave up waiting. Answered 503, never 500: the caller may retry with the same ids.
 */
export function isTemporalUnreachable(err: unknown): boolean {
  if (isDeadlineExceeded(err)) return true;
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
