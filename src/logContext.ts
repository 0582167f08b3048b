import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Fields every log line written inside a scope carries (src/logger.ts adds them): the API
 * request's id while it is handled, the request id and workflow of an activity while it runs
 * (src/temporal/requestId.ts). One id then ties a request, its workflow and the worker's lines.
 */
export interface LogContext {
  requestId: string;
  workflowId?: string;
}

const scope = new AsyncLocalStorage<LogContext>();

export function withLogContext<T>(context: LogContext, fn: () => T): T {
  return scope.run(context, fn);
}

export function currentLogContext(): LogContext | undefined {
  return scope.getStore();
}
