/**
 * The channels of the worker's outcome hints to the API (LISTEN/NOTIFY; src/db/outcomeHints.ts
 * says what they are for), and the one rule of their payloads: the record as written rides along
 * unless that would be too long. A leaf module: the domain's statements send hints themselves,
 * and the API's listener reads them.
 */
export const PAYMENT_OUTCOME_CHANNEL = 'payment_outcomes';
export const REFUND_OUTCOME_CHANNEL = 'refund_outcomes';
/**
 * A merchant's provider configuration changed (`providers:set`, `providers:remove`): sent by the
 * change's own transaction (delivered at its commit), payload `{ merchantId, environment }`; every
 * API process drops its cached resolution, so the next request reads the row (decision 0081).
 */
export const PROVIDER_CHANGE_CHANNEL = 'provider_changes';

/** PostgreSQL refuses a notification payload of 8000 bytes or more: the view is left out well before. */
const MAX_HINT_BYTES = 7000;

/** A hint's payload with the record as written, or without it when that would be too long. */
export function hintPayload(withView: object, withoutView: object): string {
  const text = JSON.stringify(withView);
  return Buffer.byteLength(text) < MAX_HINT_BYTES ? text : JSON.stringify(withoutView);
}
