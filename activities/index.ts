import type { ActivityDeps } from './deps';
import { createMerchantEventActivities } from './merchantEvents';
import { createPaymentActivities } from './payments';
import { createProbeActivities } from './probe';
import { createRefundActivities } from './refunds';
import { createRefundRecordActivities } from './refundRecords';
import { createSweeperActivities } from './sweeper';
import { createEmailActivities } from './emails';
import { createSubscriptionActivities } from './subscriptions';
import { createVisibilityActivities } from './visibility';

export type { ActivityDeps } from './deps';

/** Every activity the worker registers, built from its dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createProbeActivities(deps),
    ...createPaymentActivities(deps),
    ...createMerchantEventActivities(deps),
    ...createRefundActivities(deps),
    ...createRefundRecordActivities(deps),
    ...createSweeperActivities(deps),
    ...createEmailActivities(deps),
    ...createSubscriptionActivities(deps),
    ...createVisibilityActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
