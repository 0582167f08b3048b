import { lookup } from 'node:dns/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApplicationFailure } from '@temporalio/activity';
import { MerchantEvent, type KeyEnvironment } from '../src/db/entities';
import { ensureWebhookSecret } from '../src/domain/merchants';
import { sign } from '../src/providers/signature';
import { classifyAddress } from '../src/net/addressClass';
import type { ActivityDeps } from './deps';

/**
 * The environment of the record an event reports (a refund's is its payment's). Unknown: live,
 * the stricter one.
 */
async function eventEnvironment(em: EntityManager, resourceId: string): Promise<KeyEnvironment> {
  const row: { environment?: KeyEnvironment } | undefined = await em.getConnection().execute(
    `select environment from payments where id = ?
     union all select environment from subscriptions where id = ?
     union all select p.environment from refunds r join payments p on p.id = r.payment_id where r.id = ?
     limit 1`,
    [resourceId, resourceId, resourceId],
    'get',
  );
  return row?.environment ?? 'live';
}

/**
 * Why a callback URL may not be called (null: it may). Checked at delivery, after DNS: every
 * address the host resolves to must be public, since the request may go to any of them.
 */
async function refusedTarget(callbackUrl: string): Promise<string | null> {
  let host: string;
  try {
    host = new URL(callbackUrl).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return 'invalid callback URL';
  }
  let addresses: Array<{ address: string }>;
  try {
    addresses = await lookup(host, { all: true, verbatim: true });
  } catch (err) {
    return `host ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
  }
  for (const { address } of addresses) {
    const kind = classifyAddress(address);
    if (kind !== 'public') return `${host} resolves to ${address} (${kind})`;
  }
  return null;
}

export function createMerchantEventActivities({
  orm,
  logger,
  callbackTimeoutMs = 10_000,
  privateTestCallbacks = true,
}: ActivityDeps) {
  return {
    async undeliveredEventIds(resourceId: string): Promise<string[]> {
      const events = await orm.em
        .fork()
        .find(
          MerchantEvent,
          { resourceId, deliveredAt: null },
          { orderBy: { createdAt: 'asc', id: 'asc' }, fields: ['id'] },
        );
      return events.map((e) => e.id);
    },

    /**
     * POSTs one event to the merchant's callbackUrl, signed with the merchant's webhook secret.
     * Throws on any non-2xx or timeout so the activity's retry policy tries again later, with
     * the same event id and body.
     */
    async deliverMerchantEvent(eventId: string): Promise<void> {
      const em = orm.em.fork();
      const event = await em.findOne(MerchantEvent, { id: eventId }, { populate: ['merchant'] });
      if (!event || event.deliveredAt || !event.callbackUrl) return;
      // Live callbacks never reach private networks (SSRF); test ones may outside production.
      const environment = await eventEnvironment(em, event.resourceId);
      if (environment === 'live' || !privateTestCallbacks) {
        const refused = await refusedTarget(event.callbackUrl);
        if (refused) {
          event.attempts += 1;
          event.lastError = `refused: ${refused}`;
          await em.flush();
          logger.warn({ eventId, type: event.type, environment, refused }, 'merchant callback refused');
          // Retrying would not change the answer for long enough to matter: ended, not retried.
          throw ApplicationFailure.nonRetryable(`callback ${eventId} refused: ${refused}`, 'callback_refused');
        }
      }
      const secret = await ensureWebhookSecret(em, event.merchant.id);
      const body = JSON.stringify(event.payload);
      let failure: string | null = null;
      try {
        const res = await fetch(event.callbackUrl, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'payment-platform-callbacks/1',
            'x-event-id': event.id,
            'x-event-type': event.type,
            'x-signature': sign(secret, body),
          },
          body,
          redirect: 'manual',
          signal: AbortSignal.timeout(callbackTimeoutMs),
        });
        // Only the status counts; the body is never read (a merchant's endless or huge answer
        // must not hold the activity or its memory).
        await res.body?.cancel().catch(() => undefined);
        if (res.status < 200 || res.status >= 300) failure = `HTTP ${res.status}`;
      } catch (err) {
        failure = (err as Error).name === 'TimeoutError' ? 'timeout' : `network error: ${(err as Error).message}`;
      }
      event.attempts += 1;
      event.lastError = failure;
      if (!failure) event.deliveredAt = new Date();
      await em.flush();
      if (failure) {
        logger.info(
          { eventId, type: event.type, attempts: event.attempts, failure },
          'merchant callback failed; will retry',
        );
        throw ApplicationFailure.retryable(`callback ${eventId} failed: ${failure}`, 'callback_failed');
      }
    },
  };
}
