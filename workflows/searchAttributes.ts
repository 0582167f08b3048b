import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Custom search attributes, so an operator finds any merchant's work in the Temporal UI
 * (e.g. `MerchantId = "mer_..."`). Registered by the dev server at start; in production
 * create them once with `temporal operator search-attribute create` (see README).
 */
export const MerchantIdKey = defineSearchAttributeKey('MerchantId', SearchAttributeType.KEYWORD);
export const ExternalIdKey = defineSearchAttributeKey('ExternalId', SearchAttributeType.KEYWORD);
export const PaymentIdKey = defineSearchAttributeKey('PaymentId', SearchAttributeType.KEYWORD);
export const SubscriptionStatusKey = defineSearchAttributeKey('SubscriptionStatus', SearchAttributeType.KEYWORD);
/** Where the payment workflow is: `created`, `awaiting_customer`, `settled` (read PostgreSQL) or `discarded`. */
export const PaymentStatusKey = defineSearchAttributeKey('PaymentStatus', SearchAttributeType.KEYWORD);
/** Where the refund workflow is: `pending` or `settled` (read PostgreSQL for which). */
export const RefundStatusKey = defineSearchAttributeKey('RefundStatus', SearchAttributeType.KEYWORD);
/**
 * Set while a workflow has been asking a question it cannot get a known answer to for long (past
 * `stuckAfterSeconds`, default an hour, or a failure that retrying within one call cannot fix):
 * the type of the last failure (`invalid_response`, `provider_not_configured`,
 * `reconciliation_mismatch`, `timeout`, ...). Cleared once answered. Counted by the
 * `workflows_stuck` gauge (src/metrics/stuckWorkflows.ts) and alerted (WorkflowsStuck).
 */
export const StuckKey = defineSearchAttributeKey('Stuck', SearchAttributeType.KEYWORD);

export const customSearchAttributes = [
  MerchantIdKey,
  ExternalIdKey,
  PaymentIdKey,
  SubscriptionStatusKey,
  PaymentStatusKey,
  RefundStatusKey,
  StuckKey,
];
