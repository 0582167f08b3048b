/** The tables of records a provider attempt is made for; each has `provider_call_sent_at`. */
export type ProviderCallTable = 'payments' | 'invoices' | 'refunds';

/**
 * The one way a record's provider call is marked as sent (activities/providerCalls.ts says why):
 * a `marked` CTE for a statement whose `prior` CTE read the row `for update` with its `id`, its
 * earlier mark as `sent_at` and, with `whileStatus`, its `status`. An earlier mark is kept (its
 * call may have been performed); the statement reads `prior.sent_at` to learn of it. PostgreSQL
 * runs a data-modifying CTE whether or not the statement reads it.
 */
export function markSentCte(table: ProviderCallTable, whileStatus?: 'created' | 'pending'): string {
  return `marked as (
       update "${table}" set provider_call_sent_at = coalesce(prior.sent_at, now())
         from prior where "${table}".id = prior.id${whileStatus ? ` and prior.status = '${whileStatus}'` : ''}
       returning "${table}".id
     )`;
}
