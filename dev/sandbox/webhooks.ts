import { createHmac } from 'node:crypto';
import type { Logger } from '../../src/logger';
import { newSandboxId } from './state';

export type WebhookType =
  | 'payment.succeeded'
  | 'payment.failed'
  | 'payment.canceled'
  | 'refund.succeeded'
  | 'refund.failed'
  | 'dispute.created'
  | 'dispute.updated'
  | 'dispute.closed';

/** The webhook of a payment that settled after its first answer. */
export function paymentWebhookType(status: 'succeeded' | 'failed' | 'canceled'): WebhookType {
  return `payment.${status}`;
}

export const WEBHOOK_ATTEMPTS = 8;
export const WEBHOOK_FIRST_RETRY_MS = 1000;
const WEBHOOK_TIMEOUT_MS = 5000;

/** `Sandbox-Signature` header value: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t.body)>`. */
export function signWebhook(secret: string, timestamp: number, body: string): string {
  const v1 = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return `t=${timestamp},v1=${v1}`;
}

/** Logs name the receiver without its query string, which may carry a token. */
function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '[unparseable url]';
  }
}

/**
 * Sends signed events in the background: the first attempt right after the state change,
 * then retries on any non-2xx or network error (1 s, doubling, 8 attempts in all), always
 * with the same event id and body. `cancelAll` forgets what is in flight (reset, close).
 */
export class WebhookSender {
  private readonly timers = new Set<NodeJS.Timeout>();
  private abort = new AbortController();

  constructor(
    private readonly secret: string,
    private readonly log: Logger,
  ) {}

  send(url: string | null, type: WebhookType, data: unknown): void {
    if (!url) return;
    const event = { id: newSandboxId('whevt'), type, createdAt: new Date().toISOString(), data };
    const body = JSON.stringify(event);
    this.schedule(0, url, event.id, type, body, 1, this.abort.signal);
  }

  cancelAll(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.abort.abort();
    this.abort = new AbortController();
  }

  private schedule(
    delayMs: number,
    url: string,
    eventId: string,
    type: WebhookType,
    body: string,
    attempt: number,
    cancel: AbortSignal,
  ): void {
    if (cancel.aborted) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.attempt(url, eventId, type, body, attempt, cancel);
    }, delayMs);
    this.timers.add(timer);
  }

  private async attempt(
    url: string,
    eventId: string,
    type: WebhookType,
    body: string,
    attempt: number,
    cancel: AbortSignal,
  ): Promise<void> {
    const where = { eventId, type, attempt, url: safeUrl(url) };
    let outcome: string;
    try {
      const timestamp = Math.floor(Date.now() / 1000);
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'sandbox-signature': signWebhook(this.secret, timestamp, body) },
        body,
        redirect: 'manual',
        signal: AbortSignal.any([cancel, AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)]),
      });
      await res.body?.cancel().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) {
        this.log.info({ ...where, status: res.status }, 'webhook delivered');
        return;
      }
      outcome = `status ${res.status}`;
    } catch (err) {
      outcome = (err as Error).name === 'TimeoutError' ? 'timed out' : 'network error';
    }
    if (cancel.aborted) return;
    if (attempt >= WEBHOOK_ATTEMPTS) {
      this.log.warn({ ...where, outcome }, 'webhook abandoned');
      return;
    }
    const delayMs = WEBHOOK_FIRST_RETRY_MS * 2 ** (attempt - 1);
    this.log.info({ ...where, outcome, retryInMs: delayMs }, 'webhook failed, will retry');
    this.schedule(delayMs, url, eventId, type, body, attempt + 1, cancel);
  }
}
