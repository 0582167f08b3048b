/**
 * Workflow version markers (`patched(id)`). Each id guards a change to workflow code so that
 * histories recorded before it (test/replay/histories) still replay. Remove a patch only when
 * no workflow started before it can still be running.
 */

/** Provider attempts as local activities; no event lookup when there is no callbackUrl. */
export const LOCAL_PROVIDER_ATTEMPT = 'local-provider-attempt-v1';

/**
 * The refund is committed before its workflow starts (API Update-with-Start, or the sweeper):
 * no visibility wait. A row still missing then means an API of the old code started the
 * workflow inside its transaction: waited for by a regular, heartbeating activity.
 */
export const REFUND_STARTED_AFTER_COMMIT = 'refund-started-after-commit-v1';

/** Update handlers drained (`condition(allHandlersFinished)`) before a run completes. */
export const HANDLERS_DRAINED = 'handlers-drained-v1';

/**
 * PaymentStatus / RefundStatus search attributes upserted as the workflow moves; Update
 * validators reject requests for a settled record (the API reads PostgreSQL).
 */
export const STATUS_SEARCH_ATTRIBUTES = 'status-search-attributes-v1';
