/**
 * Workflow version markers (`patched(id)`). Each id guards a change to workflow code so that
 * histories recorded before it (test/replay/histories) still replay. Remove a patch only when
 * no workflow started before it can still be running.
 */

/** Provider attempts as local activities; no event lookup when there is no callbackUrl. */
export const LOCAL_PROVIDER_ATTEMPT = 'local-provider-attempt-v1';
