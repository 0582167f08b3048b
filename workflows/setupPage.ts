import { ActivityFailure, log, proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  SETUP_PAGE_WATCH_MS,
  setupPageLookDelayMs,
  type SetupPage,
  type SetupPageAnswer,
} from '../src/rules/setupPages';

/** One look at the processor: a few seconds; one that cannot answer is tried at the next look. */
const acts = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '5 minutes',
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute' },
});

export interface SetupPageInput extends SetupPage {
  merchantId: string;
  /** The first look after this long, doubling up to hourly (default 60; tests lower it). */
  pollSeconds?: number;
}

/**
 * Watches one card setup page of a customer (decision 0089): the processor's webhook keeps the
 * card when it comes; this asks the processor at growing intervals in case it never does, and
 * keeps the card itself (once: the payment method id is the page's). Ends when the card is kept,
 * the page is over without one, or the watch runs out. At most about 35 looks with the defaults,
 * so its history stays small without continue-as-new. Never fails on an answer it does not know:
 * it looks again.
 */
export async function setupPageWorkflow(input: SetupPageInput): Promise<SetupPageAnswer | 'expired'> {
  const { pollSeconds, merchantId, ...page } = input;
  const startedMs = Date.now();
  for (let looks = 0; ; looks++) {
    await sleep(setupPageLookDelayMs(looks, pollSeconds));
    let answer: SetupPageAnswer = 'pending';
    try {
      answer = await acts.lookAtSetupPage(page);
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      log.warn('setup page: the processor could not be asked; looking again later', {
        merchantId,
        paymentMethodId: page.paymentMethodId,
      });
    }
    if (answer !== 'pending') return answer;
    if (Date.now() - startedMs >= SETUP_PAGE_WATCH_MS) return 'expired';
  }
}
