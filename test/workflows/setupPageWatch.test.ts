import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { setupPageWorkflow, type SetupPageInput } from '../../workflows/setupPage';
import { SETUP_PAGE_WATCH_MS, setupPageLookDelayMs, type SetupPageAnswer } from '../../src/rules/setupPages';
import { useTimeSkippingEnvironment, withShippedWorker, terminatedAfterEachTest } from '../helpers/timeSkipping';

/**
 * A card setup page's watch (decision 0089) over its whole life, in seconds: looks at growing
 * intervals, a look that cannot answer is not a failure, and the watch ends after 25 hours with
 * a bounded number of looks.
 */
describe('setup page workflow: the watch of a page whose webhook never comes (time-skipping, stubbed activity)', () => {
  const testEnv = useTimeSkippingEnvironment();
  const started = terminatedAfterEachTest();
  let counter = 0;

  const watch = (lookAtSetupPage: jest.Mock<Promise<SetupPageAnswer>, []>) =>
    withShippedWorker(testEnv(), 'setup-page', { lookAtSetupPage }, async (taskQueue) => {
      const input: SetupPageInput = {
        customerId: 'cus_watch',
        paymentMethodId: `pm_watch_${process.pid}_${++counter}`,
        merchantId: 'mer_watch',
        processor: 'sandbox',
        transactionId: 'txn_watch',
      };
      const startMs = await testEnv().currentTimeMs();
      const handle = await testEnv().client.workflow.start(setupPageWorkflow, {
        taskQueue,
        workflowId: `setup-page-${input.paymentMethodId}`,
        args: [input],
      });
      started.push(handle);
      const result = await handle.result();
      return { result, elapsedMs: (await testEnv().currentTimeMs()) - startMs };
    });

  it('a page never completed: looked at a bounded number of times, then the watch ends (expired) after 25 hours', async () => {
    const look = jest.fn(async (): Promise<SetupPageAnswer> => 'pending');
    const { result, elapsedMs } = await watch(look);
    expect(result).toBe('expired');
    expect(elapsedMs).toBeGreaterThanOrEqual(SETUP_PAGE_WATCH_MS);
    expect(elapsedMs).toBeLessThan(SETUP_PAGE_WATCH_MS + 3_600_000 + 60_000);
    // 60 s doubling to hourly: 7 looks in the first 2 hours, then about one an hour.
    expect(look.mock.calls.length).toBeGreaterThanOrEqual(25);
    expect(look.mock.calls.length).toBeLessThanOrEqual(35);
  });

  it('a look that cannot answer (the processor down for its whole retry budget) is looked at again, never a failure', async () => {
    let looks = 0;
    const look = jest.fn(async (): Promise<SetupPageAnswer> => {
      if (Context.current().info.attempt === 1) looks++;
      // Every attempt of the first look fails, past its 5-minute budget; the second look keeps the card.
      if (looks === 1)
        throw ApplicationFailure.create({ message: 'processor unavailable', type: 'ProviderUnavailable' });
      return 'added';
    });
    const { result } = await watch(look);
    expect(result).toBe('added');
    expect(looks).toBe(2);
    // The first look was tried several times (its retries) before it gave up.
    expect(look.mock.calls.length).toBeGreaterThan(3);
  });

  it('looks after 60 s, then doubling to hourly', () => {
    expect([0, 1, 2, 5, 6, 7, 30].map((n) => setupPageLookDelayMs(n) / 1000)).toEqual([
      60, 120, 240, 1920, 3600, 3600, 3600,
    ]);
    expect(setupPageLookDelayMs(2, 1)).toBe(4_000);
  });
});
