import { ApplicationFailure } from '@temporalio/activity';
import { MerchantEvent } from '../src/db/entities';
import { ensureWebhookSecret } from '../src/domain/merchants';
import { sign } from '../src/providers/signature';
import type { ActivityDeps } from './deps';

export function createMerchantEventActivities({ orm, logger, callbackTimeoutMs = 10_000 }: ActivityDeps) {
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
        await res.arrayBuffer().catch(() => undefined);
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
