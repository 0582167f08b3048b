import type { Context } from '@temporalio/activity';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import { defaultPayloadConverter, type Headers } from '@temporalio/common';
import type { ActivityInterceptors } from '@temporalio/worker';
import { currentLogContext, withLogContext } from '../logContext';
import { readRequestId, REQUEST_ID_HEADER, REQUEST_ID_MEMO } from '../../workflows/requestId';

/**
 * One id ties an API request, the workflow it started and the worker's log lines for it
 * (workflows/requestId.ts): the client stamps what it starts inside a request's log context,
 * the workflow passes the header on (workflows/interceptors.ts), the worker logs activities
 * inside it.
 */

function withRequestIdHeader(headers: Headers, requestId: string): Headers {
  return headers[REQUEST_ID_HEADER]
    ? headers
    : { ...headers, [REQUEST_ID_HEADER]: defaultPayloadConverter.toPayload(requestId) };
}

function withRequestIdMemo<T extends { memo?: Record<string, unknown> }>(options: T, requestId: string): T {
  if (options.memo?.[REQUEST_ID_MEMO] !== undefined) return options;
  return { ...options, memo: { ...options.memo, [REQUEST_ID_MEMO]: requestId } };
}

/** A start's header and memo, inside a request's log context. */
function stampStart<T extends { headers: Headers; options: { memo?: Record<string, unknown> } }>(input: T): T {
  const requestId = currentLogContext()?.requestId;
  if (!requestId) return input;
  return {
    ...input,
    headers: withRequestIdHeader(input.headers, requestId),
    options: withRequestIdMemo(input.options, requestId),
  };
}

/**
 * For every Temporal client of the platform: a workflow started (start, signal-with-start,
 * update-with-start) while a request is handled gets the request's id as memo `requestId`
 * (shown in the UI) and header; a signal or update from a request carries it as header. Outside
 * a request (the sweeper, a CLI) nothing is added.
 */
export const requestIdClientInterceptor: WorkflowClientInterceptor = {
  startWithDetails: (input, next) => next(stampStart(input)),
  signalWithStart: (input, next) => next(stampStart(input)),
  startUpdateWithStart: (input, next) => {
    const requestId = currentLogContext()?.requestId;
    if (!requestId) return next(input);
    return next({
      ...input,
      workflowStartHeaders: withRequestIdHeader(input.workflowStartHeaders, requestId),
      workflowStartOptions: withRequestIdMemo(input.workflowStartOptions, requestId),
      updateHeaders: withRequestIdHeader(input.updateHeaders, requestId),
    });
  },
  startUpdate: (input, next) => {
    const requestId = currentLogContext()?.requestId;
    return next(requestId ? { ...input, headers: withRequestIdHeader(input.headers, requestId) } : input);
  },
  signal: (input, next) => {
    const requestId = currentLogContext()?.requestId;
    return next(requestId ? { ...input, headers: withRequestIdHeader(input.headers, requestId) } : input);
  },
};

/** The client options that stamp workflows with the request id: `new Client({ ..., ...requestIdClientOptions })`. */
export const requestIdClientOptions = { interceptors: { workflow: [requestIdClientInterceptor] } };

/**
 * The worker's side: an activity scheduled with the header runs inside a log context, so every
 * line the activity writes through the platform's logger carries `requestId` and `workflowId`;
 * the SDK's own lines about the activity (Context.log: failures, retries) carry `requestId` too.
 */
export function requestIdActivityInterceptors(ctx: Context): ActivityInterceptors {
  let requestId: string | undefined;
  return {
    inbound: {
      execute: (input, next) => {
        requestId = readRequestId(input.headers);
        if (!requestId) return next(input);
        const workflowId = ctx.info.workflowExecution?.workflowId;
        return withLogContext({ requestId, ...(workflowId ? { workflowId } : {}) }, () => next(input));
      },
    },
    outbound: {
      getLogAttributes: (input, next) => next(requestId ? { ...input, requestId } : input),
    },
  };
}
