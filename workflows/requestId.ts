import { defaultPayloadConverter, type Headers } from '@temporalio/common';

/**
 * The API request that started a workflow, carried with it so one id ties the request's log
 * line, the workflow and the worker's log lines together:
 * - the workflow's memo `requestId`: set at start (src/temporal/requestId.ts), shown in the
 *   Temporal UI, kept by the server across continue-as-new;
 * - the Temporal header `request-id`: on the start, then on every activity, child workflow and
 *   continue-as-new the workflow schedules (workflows/interceptors.ts), where the worker puts it
 *   into the activity's log lines.
 */
export const REQUEST_ID_HEADER = 'request-id';
export const REQUEST_ID_MEMO = 'requestId';

/** The request id a Temporal header carries (absent or unreadable: undefined). */
export function readRequestId(headers: Headers): string | undefined {
  const payload = headers[REQUEST_ID_HEADER];
  if (!payload) return undefined;
  try {
    const value: unknown = defaultPayloadConverter.fromPayload(payload);
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}
