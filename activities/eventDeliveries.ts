import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Context } from '@temporalio/activity';
import { MerchantEvent, WebhookEndpoint, type KeyEnvironment } from '../src/db/entities';
import { signingSecrets, SigningSecretUnusable } from '../src/domain/signingSecrets';
import { revealEndpointSecrets, stopEndpointDeliveries } from '../src/domain/webhookEndpoints';
import { recordEmail } from '../src/domain/emails';
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
import { signingSecretsOf } from '../src/rules/eventFilters';
import {
  DEFAULT_DELIVERY_CONCURRENCY_PER_MERCHANT,
  DELIVERY_ATTEMPT_TIMEOUT_MS,
  endpointDisabled,
  givesUp,
  hostPauseSeconds,
  retryDelaySeconds,
} from '../src/rules/deliverySchedule';
import { workerMetrics } from '../src/metrics/worker';
import type { ActivityDeps } from './deps';

/**
 * Where a delivery may be sent: the one address its request will connect to, or why it may not
 * be sent. The host is resolved once, here, within `timeoutMs`; the request is pinned to the
 * address this answers (src/net/pinnedPost.ts), so the address checked is the address called
 * (DNS rebinding). When checked, every address the host has must be public, as any of them could
 * be the one chosen.
 */
export async function deliveryTarget(
  target: string,
  resolveHost: ResolveHost,
  checked: boolean,
  timeoutMs: number,
): Promise<{ url: URL; pinned: ResolvedAddress } | { refused: string } | { unreachable: string }> {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return { refused: 'invalid callback URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { refused: `scheme ${url.protocol} not allowed` };
  const host = urlHost(url);
  let addresses: ResolvedAddress[];
  try {
    addresses = await resolveUrlHost(url, resolveHost, { timeoutMs });
  } catch (err) {
    const reason = `host ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
    // Unchecked (test callbacks outside production), or a resolver that gave up in time, a name
    // that does not resolve yet is an ordinary delivery failure, retried like a refused connection.
    const timedOut = (err as NodeJS.ErrnoException).code === 'ETIMEOUT';
    return checked && !timedOut ? { refused: reason } : { unreachable: reason };
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

/** A due job as the claim answers it. */
interface ClaimedJob {
  id: string;
  merchant_id: string;
  environment: KeyEnvironment;
  event_id: string;
  endpoint_id: string | null;
  url: string | null;
  attempts: number;
  created_at: Date;
  pending_delivery_id: string | null;
}

/** What one attempt came to (the delivery step counts them; `deferred`: its host is paused). */
export type AttemptOutcome = 'succeeded' | 'failed' | 'refused' | 'deferred' | 'cancelled';

/** What one delivery step did for a merchant, and when its next delivery is due. */
export interface DueDeliveries {
  /** ISO time of the merchant's earliest pending delivery; null: none pending. */
  nextDueAt: string | null;
  /** Emails recorded by the step (an endpoint disabled): the workflow sends them. */
  emailIds: string[];
  attempted: number;
}

/** How long one delivery step delivers before it hands back to its workflow (then goes on). */
const STEP_BUDGET_MS = 50_000;
/** A lease or claim outlives its holder by this much: long enough for the slowest attempt. */
const HOLD_SECONDS = Math.ceil(DELIVERY_ATTEMPT_TIMEOUT_MS / 1000) + 30;

/**
 * The delivery of events to merchants (decision 0069): every destination of an event (the
 * record's callbackUrl, each matching endpoint) is a delivery job; the delivery step of one
 * merchant delivers its due jobs, at most `concurrencyPerMerchant` at once, each attempt bounded
 * to 10 s including name resolution. It runs only on the delivery task queue.
 */
export function createEventDeliveryActivities(deps: ActivityDeps) {
  const { orm, logger, providers, privateTestCallbacks = true } = deps;
  const resolveHost = deps.resolveHost ?? systemResolveHost;
  const attemptTimeoutMs = deps.callbackTimeoutMs ?? DELIVERY_ATTEMPT_TIMEOUT_MS;
  const concurrency = deps.deliveries?.concurrencyPerMerchant ?? DEFAULT_DELIVERY_CONCURRENCY_PER_MERCHANT;
  const retryInitialSeconds = deps.deliveries?.retryInitialSeconds ?? 10;
  const exec = <T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> =>
    orm.em.getConnection().execute(sql, params);

  /** The merchant's lease: taken when free or lapsed; renewed by its holder. */
  const takeLease = async (merchantId: string, holder: string): Promise<boolean> => {
    const rows = await exec(
      `insert into delivery_leases (merchant_id, holder, until) values (?, ?, now() + make_interval(secs => ?))
        on conflict (merchant_id) do update set holder = excluded.holder, until = excluded.until
        where delivery_leases.until < now() or delivery_leases.holder = excluded.holder
        returning holder`,
      [merchantId, holder, HOLD_SECONDS],
    );
    return rows.length === 1;
  };
  const releaseLease = (merchantId: string, holder: string) =>
    exec(`delete from delivery_leases where merchant_id = ? and holder = ?`, [merchantId, holder]);

  const claimDue = (merchantId: string, limit: number) =>
    exec<ClaimedJob>(
      `update delivery_jobs j set claimed_until = now() + make_interval(secs => ?), updated_at = now()
        where j.id in (select id from delivery_jobs
                        where merchant_id = ? and status = 'pending' and next_attempt_at <= now()
                          and (claimed_until is null or claimed_until < now())
                        order by next_attempt_at, id limit ? for update skip locked)
        returning j.id, j.merchant_id, j.environment, j.event_id, j.endpoint_id, j.url, j.attempts, j.created_at,
                  j.pending_delivery_id`,
      [HOLD_SECONDS, merchantId, limit],
    );

  /** The merchant's failing hosts: paused until when. */
  const loadPauses = async (merchantId: string): Promise<Map<string, Date>> => {
    const rows = await exec<{ host: string; paused_until: Date }>(
      `select host, paused_until from delivery_host_pauses where merchant_id = ? and paused_until > now()`,
      [merchantId],
    );
    return new Map(rows.map((r) => [r.host, new Date(r.paused_until)]));
  };

  /**
   * Counts a host's failure in a row; answers until when it is paused (null: not paused, or
   * paused already). An attempt begun before its host paused that fails during the pause is not
   * counted: the pause is what its failures earned, doubled only by a failed try after it.
   */
  const hostFailed = (merchantId: string, host: string): Promise<Date | null> =>
    // The count and the pause are written under the row's lock, in one transaction: a failure
    // that lands between them (attempts in flight at once) sees the pause and is not counted.
    orm.em.fork().transactional(async (tx) => {
      const [row] = await tx.execute<Array<{ failures: number }>>(
        `insert into delivery_host_pauses as p (merchant_id, host, failures, paused_until) values (?, ?, 1, null)
          on conflict (merchant_id, host) do update set failures = p.failures + 1
          where p.paused_until is null or p.paused_until <= now()
          returning failures`,
        [merchantId, host],
      );
      if (!row) return null;
      const seconds = hostPauseSeconds(row.failures);
      if (seconds === 0) return null;
      const until = new Date(Date.now() + seconds * 1000);
      await tx.execute(`update delivery_host_pauses set paused_until = ? where merchant_id = ? and host = ?`, [
        until,
        merchantId,
        host,
      ]);
      return until;
    });
  const hostSucceeded = (merchantId: string, host: string) =>
    exec(`delete from delivery_host_pauses where merchant_id = ? and host = ?`, [merchantId, host]);

  /** The attempt row GET /events/{id} shows: pending until its answer is recorded. */
  const beginAttempt = async (job: ClaimedJob, url: string): Promise<string> => {
    if (job.pending_delivery_id) {
      await exec(`update event_deliveries set url = ?, at = now() where id = ?`, [url, job.pending_delivery_id]);
      return job.pending_delivery_id;
    }
    const id = newId('eventDelivery');
    await exec(
      `insert into event_deliveries (id, event_id, endpoint_id, url, attempt, status, at)
       select ?, ?, ?, ?, coalesce(max(attempt), 0) + 1, 'pending', now()
         from event_deliveries where event_id = ? and endpoint_id is not distinct from ?`,
      [id, job.event_id, job.endpoint_id, url, job.event_id, job.endpoint_id],
    );
    return id;
  };
  const endAttempt = (
    deliveryId: string,
    o: { status: 'succeeded' | 'failed'; httpStatus: number | null; error: string | null; durationMs: number },
  ) =>
    exec(`update event_deliveries set status = ?, http_status = ?, error = ?, duration_ms = ? where id = ?`, [
      o.status,
      o.httpStatus,
      o.error,
      o.durationMs,
      deliveryId,
    ]);

  /** Ends a job without an attempt (its endpoint disabled, its event gone): its resend row too. */
  const cancelJob = async (job: ClaimedJob, reason: string): Promise<void> => {
    await exec(
      `update delivery_jobs set status = 'cancelled', claimed_until = null, last_error = ?, updated_at = now() where id = ?`,
      [reason, job.id],
    );
    if (job.pending_delivery_id) {
      await exec(`update event_deliveries set status = 'failed', error = ? where id = ? and status = 'pending'`, [
        reason,
        job.pending_delivery_id,
      ]);
    }
  };

  /**
   * An endpoint's failure: its failing streak starts (or goes on); 3 days of it disable the
   * endpoint, stop its pending deliveries and email the merchant. Answers the email recorded.
   */
  const endpointFailed = async (endpointId: string): Promise<string | null> => {
    const em = orm.em.fork();
    return em.transactional(async (tx) => {
      const [row] = await tx.execute<Array<{ failing_since: Date }>>(
        `update webhook_endpoints set failing_since = coalesce(failing_since, now())
          where id = ? and status = 'enabled' returning failing_since`,
        [endpointId],
      );
      if (!row || !endpointDisabled(new Date(row.failing_since), new Date())) return null;
      const endpoint = await tx.findOne(WebhookEndpoint, { id: endpointId }, { populate: ['merchant'] });
      if (!endpoint) return null;
      await tx.execute(`update webhook_endpoints set status = 'disabled', updated_at = now() where id = ?`, [
        endpointId,
      ]);
      // Its resends' announced attempts end too (decision 0070), not only its jobs.
      await stopEndpointDeliveries(tx, endpointId, 'endpoint disabled');
      logger.warn(
        { endpointId, merchantId: endpoint.merchant.id },
        'webhook endpoint disabled after 3 days of failures',
      );
      const to = endpoint.merchant.email;
      if (!to) return null;
      const email = recordEmail(tx, {
        merchant: endpoint.merchant,
        dedupeKey: `endpoint-disabled:${endpointId}:${new Date(row.failing_since).toISOString()}`,
        to,
        subject: `Webhook endpoint disabled: ${endpoint.url}`,
        text:
          `Every delivery to your ${endpoint.environment} webhook endpoint ${endpoint.id} (${endpoint.url}) ` +
          `failed since ${new Date(row.failing_since).toISOString()}, so it is disabled and its pending ` +
          `deliveries stopped. Fix the endpoint, then enable it again (PATCH /webhook-endpoints/${endpoint.id} ` +
          `{"status": "enabled"}); events it missed can be resent (POST /events/{id}/resend).`,
      });
      return email.id;
    });
  };

  /** The secrets a delivery signs with; null when they cannot be opened (an operator's fault). */
  const secretsFor = async (job: ClaimedJob, endpoint: WebhookEndpoint | null): Promise<string[] | null> => {
    try {
      if (endpoint) {
        if (!providers.secrets) throw new SigningSecretUnusable('PROVIDER_SECRETS_KEY is not set');
        return signingSecretsOf(revealEndpointSecrets(providers.secrets, endpoint), new Date());
      }
      const s = await signingSecrets(orm.em.fork(), providers.secrets, job.merchant_id, job.environment);
      return s.previous === null ? [s.current] : [s.current, s.previous];
    } catch (err) {
      logger.error(
        { jobId: job.id, endpointId: job.endpoint_id, reason: (err as Error).message },
        'delivery signing secret unusable',
      );
      return null;
    }
  };

  /** One attempt of one claimed job: POSTed (or refused), recorded, and the job moved on. */
  async function attempt(
    job: ClaimedJob,
    pauses: Map<string, Date>,
  ): Promise<{ outcome: AttemptOutcome; emailId: string | null }> {
    const em: EntityManager = orm.em.fork();
    const event = await em.findOne(MerchantEvent, { id: job.event_id });
    if (!event) {
      await cancelJob(job, 'event pruned');
      return { outcome: 'cancelled', emailId: null };
    }
    let endpoint: WebhookEndpoint | null = null;
    if (job.endpoint_id) {
      endpoint = await em.findOne(WebhookEndpoint, { id: job.endpoint_id }, { populate: ['merchant'] });
      // Deleted: its jobs went with it (cascade). Disabled: its pending deliveries stop.
      if (!endpoint) return { outcome: 'cancelled', emailId: null };
      if (endpoint.status !== 'enabled') {
        await cancelJob(job, 'endpoint disabled');
        return { outcome: 'cancelled', emailId: null };
      }
    }
    const target = endpoint?.url ?? job.url ?? '';
    // A host is a name and port: another server on the same machine is another host.
    let host = '';
    try {
      host = new URL(target).host;
    } catch {
      // An invalid URL is refused below, without a host.
    }
    const pausedUntil = pauses.get(host);
    if (pausedUntil && pausedUntil.getTime() > Date.now()) {
      // A paused host's deliveries wait without spending an attempt.
      await exec(
        `update delivery_jobs set next_attempt_at = ?, claimed_until = null, updated_at = now() where id = ?`,
        [pausedUntil, job.id],
      );
      return { outcome: 'deferred', emailId: null };
    }
    const deliveryId = await beginAttempt(job, target);
    const startedAt = performance.now();
    const elapsed = () => Math.round(performance.now() - startedAt);
    const remaining = () => Math.max(1, attemptTimeoutMs - elapsed());
    // Live deliveries never reach private networks (SSRF); test ones may outside production.
    const checked = job.environment === 'live' || !privateTestCallbacks;
    const resolved = await deliveryTarget(target, resolveHost, checked, remaining());
    let failure: string | null = null;
    let httpStatus: number | null = null;
    let refused = false;
    let countsForHost = true;
    if ('refused' in resolved) {
      failure = `refused: ${resolved.refused}`;
      refused = true;
    } else if ('unreachable' in resolved) {
      failure = `network error: ${resolved.unreachable}`;
    } else {
      const secrets = await secretsFor(job, endpoint);
      if (!secrets) {
        failure = 'signing_secret_unusable';
        countsForHost = false;
      } else {
        const body = JSON.stringify(eventBody(event));
        try {
          // Only the status counts; the body is never read (a merchant's endless or huge answer
          // must not hold the step or its memory).
          httpStatus = await postPinned({
            url: resolved.url,
            pinned: resolved.pinned,
            headers: {
              'content-type': 'application/json',
              'user-agent': 'payment-platform-callbacks/1',
              'x-event-id': event.id,
              'x-event-type': event.type,
              'x-signature': signAll(secrets, body),
            },
            body,
            timeoutMs: remaining(),
          });
          if (httpStatus < 200 || httpStatus >= 300) failure = `HTTP ${httpStatus}`;
        } catch (err) {
          failure = (err as Error).name === 'TimeoutError' ? 'timeout' : `network error: ${(err as Error).message}`;
        }
      }
    }
    const durationMs = elapsed();
    await endAttempt(deliveryId, { status: failure ? 'failed' : 'succeeded', httpStatus, error: failure, durationMs });
    const attempts = job.attempts + 1;
    if (!failure) {
      await exec(
        `update delivery_jobs set status = 'succeeded', attempts = ?, claimed_until = null, pending_delivery_id = null,
                last_error = null, updated_at = now() where id = ?`,
        [attempts, job.id],
      );
      if (host) {
        await hostSucceeded(job.merchant_id, host);
        pauses.delete(host);
      }
      if (endpoint) await exec(`update webhook_endpoints set failing_since = null where id = ?`, [endpoint.id]);
      workerMetrics.eventDelivery('succeeded', durationMs / 1000);
      return { outcome: 'succeeded', emailId: null };
    }
    // Refused: retrying would not change the answer for long enough to matter.
    const final = refused || givesUp(new Date(job.created_at), new Date());
    await exec(
      `update delivery_jobs set status = ?, attempts = ?, claimed_until = null, pending_delivery_id = null, last_error = ?,
              next_attempt_at = now() + make_interval(secs => ?), updated_at = now() where id = ?`,
      [final ? 'failed' : 'pending', attempts, failure, retryDelaySeconds(attempts, retryInitialSeconds), job.id],
    );
    if (host && countsForHost && !refused) {
      const until = await hostFailed(job.merchant_id, host);
      if (until) pauses.set(host, until);
    }
    const emailId = endpoint ? await endpointFailed(endpoint.id) : null;
    workerMetrics.eventDelivery(refused ? 'refused' : 'failed', durationMs / 1000);
    logger.info(
      {
        merchantId: job.merchant_id,
        eventId: event.id,
        type: event.type,
        objectId: event.objectId,
        endpointId: job.endpoint_id,
        attempts,
        failure,
        final,
      },
      'event delivery failed',
    );
    return { outcome: refused ? 'refused' : 'failed', emailId };
  }

  return {
    /**
     * Delivers a merchant's due deliveries, at most `concurrency` at once, for up to 50 s, then
     * answers when the next one is due (its workflow waits until then, or until woken). Only one
     * step per merchant runs at a time (the merchant's delivery lease): another finds the lease
     * held and answers when it lapses. Heartbeats while it runs; a step whose worker is lost lets
     * its lease and claims lapse, and the next step takes them.
     */
    async deliverDueEvents(merchantId: string): Promise<DueDeliveries> {
      const ctx = Context.current();
      const holder = randomUUID();
      const emailIds: string[] = [];
      if (!(await takeLease(merchantId, holder))) {
        const [lease] = await exec<{ until: Date }>(`select until from delivery_leases where merchant_id = ?`, [
          merchantId,
        ]);
        return {
          nextDueAt: lease ? new Date(lease.until).toISOString() : new Date().toISOString(),
          emailIds,
          attempted: 0,
        };
      }
      let attempted = 0;
      try {
        const pauses = await loadPauses(merchantId);
        const inFlight = new Set<Promise<void>>();
        const stopAt = Date.now() + STEP_BUDGET_MS;
        let renewedAt = Date.now();
        for (;;) {
          if (Date.now() < stopAt && inFlight.size < concurrency) {
            const jobs = await claimDue(merchantId, concurrency - inFlight.size);
            for (const job of jobs) {
              const run: Promise<void> = attempt(job, pauses)
                .then(({ outcome, emailId }) => {
                  if (outcome !== 'deferred' && outcome !== 'cancelled') attempted++;
                  if (emailId) emailIds.push(emailId);
                })
                .catch((err: unknown) => {
                  // Its claim lapses and a later step tries it again.
                  logger.warn({ jobId: job.id, err: (err as Error).message }, 'event delivery attempt not recorded');
                })
                .finally(() => inFlight.delete(run));
              inFlight.add(run);
            }
          }
          // Nothing due and nothing running, or out of time with everything finished.
          if (inFlight.size === 0) break;
          await Promise.race(inFlight);
          if (Date.now() - renewedAt > 5_000) {
            renewedAt = Date.now();
            await takeLease(merchantId, holder);
            ctx.heartbeat({ attempted });
          }
        }
      } finally {
        await releaseLease(merchantId, holder).catch(() => undefined);
      }
      const [next] = await exec<{ due: Date | null }>(
        `select min(greatest(next_attempt_at, coalesce(claimed_until, next_attempt_at))) as due
           from delivery_jobs where merchant_id = ? and status = 'pending'`,
        [merchantId],
      );
      return { nextDueAt: next?.due ? new Date(next.due).toISOString() : null, emailIds, attempted };
    },
  };
}
