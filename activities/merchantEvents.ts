import type { EntityManager } from '@mikro-orm/postgresql';
import { ApplicationFailure } from '@temporalio/activity';
import { MerchantEvent, type EventDeliveryStatus } from '../src/db/entities';
import { signingSecrets, SigningSecretUnusable } from '../src/domain/signingSecrets';
import { signAll } from '../src/providers/signature';
import { eventBody } from '../src/domain/events';
import { newId } from '../src/ids';
import { classifyAddress } from '../src/net/addressClass';
import {
  postPinned,
  resolveUrlHost,
  systemResolveHost,
  urlHost,
  type ResolvedAddress,
  type ResolveHost,
} from '../src/net/pinnedPost';
import type { ActivityDeps } from './deps';
import { workerMetrics } from '../src/metrics/worker';

/**
 * Where a callback may be sent: the one address its request will connect to, or why it may not
 * be called. The host is resolved once, here; the request is pinned to the address this answers
 * (src/net/pinnedPost.ts), so the address checked is the address called (DNS rebinding). When
 * checked, every address the host has must be public, as any of them could be the one chosen.
 */
async function callbackTarget(
  callbackUrl: string,
  resolveHost: ResolveHost,
  checked: boolean,
): Promise<{ url: URL; pinned: ResolvedAddress } | { refused: string } | { unreachable: string }> {
  let url: URL;
  try {
    url = new URL(callbackUrl);
  } catch {
    return { refused: 'invalid callback URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { refused: `scheme ${url.protocol} not allowed` };
  const host = urlHost(url);
  let addresses: ResolvedAddress[];
  try {
    addresses = await resolveUrlHost(url, resolveHost);
  } catch (err) {
    const reason = `host ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
    // Unchecked (test callbacks outside production), a name that does not resolve yet is an
    // ordinary delivery failure, retried like a refused connection.
    return checked ? { refused: reason } : { unreachable: reason };
  }
  if (addresses.length === 0) return checked ? { refused: `host ${host} has no address` } : { unreachable: host };
  if (checked) {
    for (const { address } of addresses) {
      const kind = classifyAddress(address);
      if (kind !== 'public') return { refused: `${host} resolves to ${address} (${kind})` };
    }
  }
  return { url, pinned: addresses[0]! };
}

/**
 * A delivery's claim on its event: longer than the slowest POST (the callback timeout) and the
 * statements around it, so it lapses only when its worker is gone.
 */
const claimSeconds = (callbackTimeoutMs: number) => Math.ceil(callbackTimeoutMs / 1000) + 30;

export function createMerchantEventActivities({
  orm,
  logger,
  providers,
  callbackTimeoutMs = 10_000,
  privateTestCallbacks = true,
  resolveHost = systemResolveHost,
}: ActivityDeps) {
  /** Takes the event for this delivery unless it is delivered or another delivery holds it. */
  const claim = async (em: EntityManager, eventId: string): Promise<boolean> => {
    const claimed: unknown[] = await em.getConnection().execute(
      `update merchant_events set claimed_until = now() + make_interval(secs => ?)
        where id = ? and delivered_at is null and (claimed_until is null or claimed_until < now())
        returning id`,
      [claimSeconds(callbackTimeoutMs), eventId],
    );
    return claimed.length === 1;
  };
  /** One attempt's outcome (null: delivered), the claim released; answers the attempts so far. */
  const recordAttempt = async (em: EntityManager, eventId: string, failure: string | null): Promise<number> => {
    const [row]: Array<{ attempts: number }> = await em.getConnection().execute(
      `update merchant_events
          set attempts = attempts + 1, last_error = ?, delivered_at = case when ? then now() else delivered_at end,
              claimed_until = null
        where id = ? returning attempts`,
      [failure, failure === null, eventId],
    );
    return row?.attempts ?? 0;
  };

  /** An attempt begun (GET /events/{id} `deliveries`): pending until its answer is recorded. */
  const beginDelivery = async (em: EntityManager, eventId: string, url: string, attempt: number): Promise<string> => {
    const id = newId('eventDelivery');
    await em
      .getConnection()
      .execute(
        `insert into event_deliveries (id, event_id, endpoint_id, url, attempt, status, at) values (?, ?, null, ?, ?, 'pending', now())`,
        [id, eventId, url, attempt],
      );
    return id;
  };
  const endDelivery = async (
    em: EntityManager,
    deliveryId: string,
    outcome: {
      status: Exclude<EventDeliveryStatus, 'pending'>;
      httpStatus: number | null;
      error: string | null;
      durationMs: number;
    },
  ): Promise<void> => {
    await em
      .getConnection()
      .execute(`update event_deliveries set status = ?, http_status = ?, error = ?, duration_ms = ? where id = ?`, [
        outcome.status,
        outcome.httpStatus,
        outcome.error,
        outcome.durationMs,
        deliveryId,
      ]);
  };

  return {
    async undeliveredEventIds(resourceId: string): Promise<string[]> {
      const events = await orm.em
        .fork()
        .find(
          MerchantEvent,
          { resourceId, deliveredAt: null, callbackUrl: { $ne: null } },
          { orderBy: { createdAt: 'asc', id: 'asc' }, fields: ['id'] },
        );
      return events.map((e) => e.id);
    },

    /**
     * POSTs one event to the merchant's callbackUrl, signed with the merchant's webhook secret.
     * Throws on any non-2xx or timeout so the activity's retry policy tries again later, with
     * the same event id and body. The event is claimed first (a conditional UPDATE, as an email
     * is): while one delivery holds it, another (the outbox relay's and a late original one, or
     * a retry after a lost worker) does not POST it but fails `callback_busy` and tries later,
     * when it finds it delivered or the claim released or lapsed.
     */
    async deliverMerchantEvent(eventId: string): Promise<void> {
      const em = orm.em.fork();
      const event = await em.findOne(MerchantEvent, { id: eventId }, { populate: ['merchant'] });
      if (!event || event.deliveredAt || !event.callbackUrl) return;
      if (!(await claim(em, eventId))) {
        const delivered = await em.fork().findOne(MerchantEvent, { id: eventId }, { fields: ['deliveredAt'] });
        if (!delivered || delivered.deliveredAt) return;
        throw ApplicationFailure.retryable(
          `callback ${eventId} is being delivered by another attempt`,
          'callback_busy',
        );
      }
      // Live callbacks never reach private networks (SSRF); test ones may outside production.
      const { environment } = event;
      const attempt = event.attempts + 1;
      const deliveryId = await beginDelivery(em, eventId, event.callbackUrl, attempt);
      const startedAt = performance.now();
      const elapsed = () => Math.round(performance.now() - startedAt);
      const target = await callbackTarget(
        event.callbackUrl,
        resolveHost,
        environment === 'live' || !privateTestCallbacks,
      );
      if ('refused' in target) {
        const { refused } = target;
        await recordAttempt(em, eventId, `refused: ${refused}`);
        await endDelivery(em, deliveryId, {
          status: 'failed',
          httpStatus: null,
          error: `refused: ${refused}`,
          durationMs: elapsed(),
        });
        workerMetrics.callback('refused');
        logger.warn({ eventId, type: event.type, environment, refused }, 'merchant callback refused');
        // Retrying would not change the answer for long enough to matter: ended, not retried.
        throw ApplicationFailure.nonRetryable(`callback ${eventId} refused: ${refused}`, 'callback_refused');
      }
      // Signed with the merchant's secret of the event's environment (and, during a rotation's
      // overlap, the previous one too). A secret that does not open is an operator's to fix: retried.
      let secrets;
      try {
        secrets = await signingSecrets(em, providers.secrets, event.merchant.id, environment);
      } catch (err) {
        if (!(err instanceof SigningSecretUnusable)) throw err;
        await em.getConnection().execute('update merchant_events set claimed_until = null where id = ?', [eventId]);
        // Nothing was sent: the attempt shown by GET /events/{id} says why.
        await endDelivery(em, deliveryId, {
          status: 'failed',
          httpStatus: null,
          error: 'signing_secret_unusable',
          durationMs: elapsed(),
        });
        logger.error({ eventId, environment, reason: err.message }, 'merchant callback signing secret unusable');
        throw ApplicationFailure.retryable(`callback ${eventId} not sent: ${err.message}`, 'signing_secret_unusable');
      }
      const body = JSON.stringify(eventBody(event));
      let failure: string | null = 'unreachable' in target ? `network error: ${target.unreachable}` : null;
      let httpStatus: number | null = null;
      if ('url' in target) {
        try {
          // Only the status counts; the body is never read (a merchant's endless or huge answer
          // must not hold the activity or its memory).
          const status = await postPinned({
            url: target.url,
            pinned: target.pinned,
            headers: {
              'content-type': 'application/json',
              'user-agent': 'payment-platform-callbacks/1',
              'x-event-id': event.id,
              'x-event-type': event.type,
              'x-signature': signAll(
                secrets.previous === null ? [secrets.current] : [secrets.current, secrets.previous],
                body,
              ),
            },
            body,
            timeoutMs: callbackTimeoutMs,
          });
          httpStatus = status;
          if (status < 200 || status >= 300) failure = `HTTP ${status}`;
        } catch (err) {
          failure = (err as Error).name === 'TimeoutError' ? 'timeout' : `network error: ${(err as Error).message}`;
        }
      }
      const attempts = await recordAttempt(em, eventId, failure);
      await endDelivery(em, deliveryId, {
        status: failure ? 'failed' : 'succeeded',
        httpStatus,
        error: failure,
        durationMs: elapsed(),
      });
      workerMetrics.callback(failure ? 'failed' : 'delivered');
      if (failure) {
        logger.info({ eventId, type: event.type, attempts, failure }, 'merchant callback failed; will retry');
        throw ApplicationFailure.retryable(`callback ${eventId} failed: ${failure}`, 'callback_failed');
      }
    },
  };
}
