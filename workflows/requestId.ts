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
