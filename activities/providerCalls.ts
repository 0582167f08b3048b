import { ApplicationFailure } from '@temporalio/activity';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ProviderError } from '../src/providers/errors';
import { ProviderCallsLimitedError } from '../src/providers/callLimits';
import { parameterisedRows } from '../src/db/orm';
import { markSentCte, type ProviderCallTable } from '../src/rules/providerCallMark';
import { PROVIDER_FAILURE, UNAVAILABLE_AFTER_EARLIER_CALL } from '../src/rules/providerFailures';

/** Defined with the other provider failure types (src/rules/providerFailures.ts). */
export { UNAVAILABLE_AFTER_EARLIER_CALL };

/**
 * Records the call as sent (committed before the provider is asked) and answers whether an
 * earlier call under the same key was recorded as sent and not proven to have done nothing.
 */
async function markSent(orm: MikroORM, table: ProviderCallTable, id: string): Promise<boolean> {
  const [row] = await parameterisedRows(
    orm.em,
    `with prior as (select id, provider_call_sent_at as sent_at from "${table}" where id = ? for update),
       ${markSentCte(table)}
     select sent_at from prior`,
    [id],
  );
  return row?.sent_at != null;
}

/** The call under the record's current key is known to have done nothing (or the key moved on). */
export async function clearProviderCallSent(orm: MikroORM, table: ProviderCallTable, id: string): Promise<void> {
  await orm.em
    .getConnection()
    .execute(`update "${table}" set provider_call_sent_at = null where id = ? and provider_call_sent_at is not null`, [
      id,
    ]);
}

/**
 * The provider of a record whose attempt just marked its call sent (a claim statement: see
 * claimPaymentForAttempt): `lookup` answers it, or null when none is configured. No call is made
 * without one, so when there is none, or the lookup fails, a mark this attempt set is taken back
 * first (a mark that was there before stays: an earlier call may have been performed).
 */
export async function providerForClaimedCall<P>(
  orm: MikroORM,
  table: ProviderCallTable,
  id: string,
  sentBefore: boolean,
  lookup: () => Promise<P | null>,
): Promise<P | null> {
  const unmark = () => (sentBefore ? Promise.resolve() : clearProviderCallSent(orm, table, id));
  let provider: P | null;
  try {
    provider = await lookup();
  } catch (err) {
    await unmark();
    throw err;
  }
  if (!provider) await unmark();
  return provider;
}

/**
 * One provider call of an attempt, recorded as sent before it is made. `unavailable` (nothing
 * done) is trusted only when no earlier call under this key is outstanding: then the mark is
 * cleared (the next try is a first call again); otherwise it is UNAVAILABLE_AFTER_EARLIER_CALL,
 * never retried blindly. A call refused over its merchant's limit was never sent: a mark this
 * attempt set is cleared, and it passes through. Other errors pass through unchanged, the mark kept.
 */
export async function sentProviderCall<T>(
  orm: MikroORM,
  table: ProviderCallTable,
  id: string,
  call: () => Promise<T>,
  /**
   * The caller's own statement marked this call sent already (the one that created the record, or
   * read it for the attempt), and found whether an earlier call was outstanding.
   */
  marked?: { sentBefore: boolean },
): Promise<T> {
  const sentBefore = marked ? marked.sentBefore : await markSent(orm, table, id);
  try {
    return await call();
  } catch (err) {
    // Refused over the merchant's limit before it was sent (decision 0085): a mark this attempt set
    // is taken back; one that was there before stays (that earlier call is still outstanding).
    if (err instanceof ProviderCallsLimitedError) {
      if (!sentBefore) await clearProviderCallSent(orm, table, id);
      throw err;
    }
    // A refused credential did nothing either: the same rule as `unavailable`.
    if (
      err instanceof ProviderError &&
      (err.kind === PROVIDER_FAILURE.unavailable || err.kind === PROVIDER_FAILURE.misconfigured)
    ) {
      if (sentBefore) {
        throw ApplicationFailure.nonRetryable(
          `${err.kind}: ${err.message}; an earlier call under the same idempotency key may have been performed`,
          UNAVAILABLE_AFTER_EARLIER_CALL,
        );
      }
      await clearProviderCallSent(orm, table, id);
    }
    throw err;
  }
}
