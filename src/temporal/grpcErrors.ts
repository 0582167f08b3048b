import { isGrpcServiceError, ServiceError } from '@temporalio/client';

const UNAVAILABLE = 14;
const DEADLINE_EXCEEDED = 4;

/** The gRPC error behind a Temporal client error (the client wraps it in a ServiceError). */
function grpcCode(err: unknown): number | undefined {
  const grpc = err instanceof ServiceError ? err.cause : err;
  return isGrpcServiceError(grpc) ? grpc.code : undefined;
}

/** The call gave up waiting: a bounded wait ran out (slow or absent worker, or no Temporal). */
export function isDeadlineExceeded(err: unknown): boolean {
  const code = grpcCode(err) ?? (err as { code?: unknown } | undefined)?.code;
  return code === DEADLINE_EXCEEDED || /deadline/i.test((err as Error | undefined)?.message ?? '');
}

/** Temporal did not take the call: nothing was decided. */
export function isTemporalUnreachable(err: unknown): boolean {
  const code = grpcCode(err);
  return code === UNAVAILABLE || code === DEADLINE_EXCEEDED;
}
