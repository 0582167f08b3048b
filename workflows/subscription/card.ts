import { condition, log, patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { CardChange, CardPage, CardUpdateState } from '../../activities/subscriptions';
import { SUBSCRIPTION_CARD_UPDATE } from '../patches';
import type { HostedCardUpdate, PaymentMethodOutcome, PaymentMethodRequest } from '../subscriptionApi';
import { PROVIDER_OUTCOME } from '../failures';
import { chargesNewCardAtOnce, type SubscriptionState } from './state';
import { ask } from './stuck';

/**
 * The provider steps of a card update, inside the Update (the API waits for it): retried while
 * the provider is unreachable or ambiguous (a setup moves no money and its key dedupes it),
 * within about the API's wait; then the update answers that nothing changed.
 */
const cards = proxyActivities<Activities>({
  startToCloseTimeout: '6 seconds',
  scheduleToCloseTimeout: '8 seconds',
  retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '2 seconds' },
});

/** Only these subscriptions take a new card; a cancellation on its way counts as cancelled. */
export function cardUpdatable(s: SubscriptionState): boolean {
  return (s.status === 'active' || s.status === 'past_due') && s.cancel === null && !s.discarded;
}

/**
 * A merchant's card update (the `updatePaymentMethod` Update), applied one at a time:
 * - a token: verified by the provider and kept; a past_due subscription's open invoice is then
 *   charged at once with it (its next attempt, a key of its own), and the answer waits for that
 *   attempt's outcome;
 * - none: a hosted page where the customer enters a card (the subscription's `redirectUrl`),
 *   watched beside the billing loop; the old card is charged until the customer completes it.
 */
export async function updateCard(s: SubscriptionState, req: PaymentMethodRequest): Promise<PaymentMethodOutcome> {
  patched(SUBSCRIPTION_CARD_UPDATE);
  await condition(() => !s.cardBusy);
  s.cardBusy = true;
  try {
    if (!cardUpdatable(s)) return { kind: 'not_updatable' };
    return req.cardToken ? await withToken(s, req.cardToken) : await hostedPage(s);
  } finally {
    s.cardBusy = false;
  }
}

async function withToken(s: SubscriptionState, cardToken: string): Promise<PaymentMethodOutcome> {
  let changed: CardChange;
  try {
    changed = await cards.replaceCard({ subscriptionId: s.input.subscriptionId, cardToken });
  } catch (err) {
    log.info('card not verified in time; nothing changed', { error: (err as Error).message });
    return { kind: PROVIDER_OUTCOME.unavailable };
  }
  switch (changed.kind) {
    case 'rejected':
      return { kind: 'rejected', code: changed.code, message: changed.message };
    case 'missing':
    case 'not_updatable':
      return { kind: 'not_updatable' };
    case 'unchanged':
      // The same card again (a repeated request): nothing to do, nothing charged again.
      return { kind: 'updated' };
    case 'replaced':
      // A hosted update still open is superseded (its watcher closes the page).
      s.cardUpdate = null;
      if (changed.status === 'past_due' && chargesNewCardAtOnce(s)) await chargeAtOnce(s);
      return { kind: 'updated' };
  }
}

/**
 * Asks the collection for its next attempt now, with the new card, and waits for its outcome
 * (or a cancellation, or the run handing over: the request is carried to the next run).
 */
async function chargeAtOnce(s: SubscriptionState): Promise<void> {
  s.cardCharge ??= 'requested';
  await condition(() => s.cardCharge === null || s.closing || s.cancel !== null || s.discarded);
}

async function hostedPage(s: SubscriptionState, untilMs?: number): Promise<PaymentMethodOutcome> {
  // A page still open is the answer again (a repeated request); kept open until `untilMs` at least.
  if (s.cardUpdate && Date.now() < s.cardUpdate.expiresAtMs) {
    if (untilMs !== undefined) s.cardUpdate.expiresAtMs = Math.max(s.cardUpdate.expiresAtMs, untilMs);
    return { kind: 'hosted' };
  }
  const page = s.cardPages + 1;
  let requested: CardPage;
  try {
    requested = await cards.requestCardUpdatePage({ subscriptionId: s.input.subscriptionId, page });
  } catch (err) {
    log.info('card update page not created in time', { error: (err as Error).message });
    return { kind: PROVIDER_OUTCOME.unavailable };
  }
  if (requested.kind === 'rejected') return { kind: 'rejected', code: requested.code, message: requested.message };
  if (requested.kind !== 'pending') return { kind: 'not_updatable' };
  s.cardPages = page;
  s.cardUpdate = {
    transactionId: requested.transactionId,
    expiresAtMs: Math.max(Date.now() + s.input.authorizationExpirySeconds * 1000, untilMs ?? 0),
  };
  s.providerEvent = false;
  watchHostedCard(s);
  return { kind: 'hosted' };
}

/**
 * A hard decline asks the customer for a new card: a hosted card update open until `untilMs`
 * (one already open is kept open that long), applied one at a time with the merchant's updates.
 * True when a page is open (its link is the subscription's `redirectUrl`). A merchant's new card
 * arriving meanwhile is charged instead (nothing is opened then).
 */
export async function openCardPageUntil(s: SubscriptionState, untilMs: number): Promise<boolean> {
  await condition(() => !s.cardBusy || s.cardCharge === 'requested' || s.cancel !== null);
  if (s.cardBusy || s.cancel) return false;
  s.cardBusy = true;
  try {
    return (await hostedPage(s, untilMs)).kind === 'hosted';
  } finally {
    s.cardBusy = false;
  }
}

/**
 * Watches the hosted card update in progress beside the billing loop (started by the Update,
 * and again by a run that continues with one open): a provider webhook makes it ask the provider;
 * completed, the new card replaces the old (a past_due subscription is charged at once); at the
 * expiry, or superseded by another card, its page is closed. Its steps are idempotent: a run that
 * hands over mid-step lets the next run's watcher take them again.
 */
export function watchHostedCard(s: SubscriptionState): void {
  const update = s.cardUpdate;
  if (!update) return;
  void watch(s, update).catch((err: unknown) =>
    log.warn('card update watch ended', { transactionId: update.transactionId, error: (err as Error).message }),
  );
}

async function watch(s: SubscriptionState, u: HostedCardUpdate): Promise<void> {
  const ended = () => s.cancel !== null || s.status === 'cancelled' || s.discarded;
  const subscriptionId = s.input.subscriptionId;
  for (;;) {
    const ms = u.expiresAtMs - Date.now();
    if (s.cardUpdate === u && !ended() && !s.providerEvent && !s.closing && ms > 0) {
      await condition(() => s.cardUpdate !== u || ended() || s.providerEvent || s.closing, ms);
    }
    if (ended()) return;
    // Handing over: the next run's watcher takes it from the cursor (an event not consumed here).
    if (s.closing) return;
    let state: CardUpdateState;
    if (s.cardUpdate !== u) {
      await tracked(
        s,
        ask(s, (q) => q.closeCardUpdate({ subscriptionId, transactionId: u.transactionId, apply: false })),
      );
      return;
    } else if (s.providerEvent) {
      s.providerEvent = false;
      state = await tracked(
        s,
        ask(s, (q) => q.checkCardUpdate({ subscriptionId, transactionId: u.transactionId })),
      );
    } else if (Date.now() >= u.expiresAtMs) {
      state = await tracked(
        s,
        ask(s, (q) => q.closeCardUpdate({ subscriptionId, transactionId: u.transactionId, apply: true })),
      );
    } else {
      continue;
    }
    if (state === 'waiting') continue;
    if (s.cardUpdate === u) s.cardUpdate = null;
    if (state === 'authorized' && s.status === 'past_due' && chargesNewCardAtOnce(s)) s.cardCharge ??= 'requested';
    return;
  }
}

/** A watcher's step counts as a background send: a run about to hand over lets it finish. */
async function tracked<T>(s: SubscriptionState, work: Promise<T>): Promise<T> {
  s.pendingSends++;
  try {
    return await work;
  } finally {
    s.pendingSends--;
  }
}
