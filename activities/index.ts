import type { ActivityDeps } from './deps';
import { createMerchantEventActivities } from './merchantEvents';
import { createEventDeliveryActivities } from './eventDeliveries';
import { createPaymentActivities } from './payments';
import { createProbeActivities } from './probe';
import { createRefundActivities } from './refunds';
import { createDisputeActivities } from './disputes';
import { createRefundRecordActivities } from './refundRecords';
import { createSweeperActivities } from './sweeper';
import { createEmailActivities, createMailer } from './emails';
import { createSubscriptionActivities } from './subscriptions';
import { createVisibilityActivities } from './visibility';
import { createTestClockActivities } from './testClocks';
import { createSetupPageActivities } from './setupPages';

export type { ActivityDeps } from './deps';

/** Every activity the worker registers, built from its dependencies. */
export function createActivities(deps: ActivityDeps) {
  // One SMTP pool for the worker: the email activities and the charges that send their receipts.
  const mailer = createMailer(deps);
  return {
    ...createProbeActivities(deps),
    ...createPaymentActivities(deps),
    ...createMerchantEventActivities(),
    ...createEventDeliveryActivities(deps),
    ...createRefundActivities(deps),
    ...createRefundRecordActivities(deps),
    ...createDisputeActivities(deps),
    ...createSweeperActivities(deps),
    ...createEmailActivities(deps, mailer),
    ...createSubscriptionActivities(deps, mailer),
    ...createVisibilityActivities(deps),
    ...createTestClockActivities(deps),
    ...createSetupPageActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
