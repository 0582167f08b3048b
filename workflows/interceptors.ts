import {
  defaultPayloadConverter,
  workflowInfo,
  type Headers,
  type WorkflowInterceptors,
  type WorkflowInterceptorsFactory,
} from '@temporalio/workflow';
import { readRequestId, REQUEST_ID_HEADER, REQUEST_ID_MEMO } from './requestId';

/**
 * Workflow interceptors, bundled with the workflows (src/workflowBundle.ts). They carry the
 * request id of the API request that started the run (workflows/requestId.ts) on to what the run
 * schedules, and into its own log lines. Headers are not part of a command's identity, so this
 * changes nothing a replay compares.
 */
export const interceptors: WorkflowInterceptorsFactory = (): WorkflowInterceptors => {
  let fromHeader: string | undefined;
  /** The start's header, else the memo (a run started before this interceptor, continued as new). */
  const requestId = (): string | undefined => {
    if (fromHeader !== undefined) return fromHeader;
    const memo = workflowInfo().memo?.[REQUEST_ID_MEMO];
    return typeof memo === 'string' ? memo : undefined;
  };
  const withRequestId = (headers: Headers): Headers => {
    const id = requestId();
    if (id === undefined || headers[REQUEST_ID_HEADER]) return headers;
    return { ...headers, [REQUEST_ID_HEADER]: defaultPayloadConverter.toPayload(id) };
  };
  return {
    inbound: [
      {
        execute: (input, next) => {
          fromHeader = readRequestId(input.headers);
          return next(input);
        },
      },
    ],
    outbound: [
      {
        scheduleActivity: (input, next) => next({ ...input, headers: withRequestId(input.headers) }),
        scheduleLocalActivity: (input, next) => next({ ...input, headers: withRequestId(input.headers) }),
        startChildWorkflowExecution: (input, next) => next({ ...input, headers: withRequestId(input.headers) }),
        continueAsNew: (input, next) => next({ ...input, headers: withRequestId(input.headers) }),
        getLogAttributes: (input, next) => {
          const id = requestId();
          return next(id === undefined ? input : { ...input, requestId: id });
        },
      },
    ],
  };
};
