/**
 * How many activities a worker process runs at once, sized to its database pool (issue 44, item 8;
 * decision 0085).
 *
 * Every money activity takes connections from the process's one ORM pool (DATABASE_POOL_MAX) for
 * its statements, and holds none while it waits on the provider (the call is marked sent and
 * committed first). The SDK's defaults (100 activity and 100 local activity slots per SDK worker,
 * two money queues per process) let 400 activities queue on a pool of 10: each waits up to a
 * minute for a connection while holding its slot, and the timeouts it then meets (an attempt's
 * 6 s, a local activity's workflow task) are the pool's, not the provider's. Sized here instead:
 *
 *   per process: DATABASE_POOL_MAX x WORKER_ACTIVITY_SLOTS_PER_CONNECTION slots (default 4),
 *   shared by the money queues the process polls (the main queue, the subscription queue),
 *   and within each queue's share half for activities, half for local activities (at least 1 each).
 *
 * The delivery queue keeps its own fixed slots (decision 0069: a delivery step waits on a merchant's
 * socket, one per merchant) and is not counted in the money queues' share.
 *
 * Fixed sizes rather than the SDK's resource-based tuner: that tuner hands out slots while CPU and
 * memory are below target, and the scarce resource here is the pool's connections, which it does
 * not see (an idle CPU beside 200 activities waiting on 10 connections looks like room for more).
 */

/** Slots per pooled connection (WORKER_ACTIVITY_SLOTS_PER_CONNECTION's default). */
export const DEFAULT_ACTIVITY_SLOTS_PER_CONNECTION = 4;

/** Merchants whose deliveries one delivery worker runs at once (decision 0069). */
export const DELIVERY_STEP_SLOTS = 200;

export interface ActivitySlotSettings {
  /** The process's ORM pool size (DATABASE_POOL_MAX; the pool the workers actually use). */
  poolMax: number;
  /** WORKER_ACTIVITY_SLOTS_PER_CONNECTION (default 4). */
  slotsPerConnection?: number;
  /** The money queues (every polled queue but the delivery queue) the process's workers poll. */
  moneyQueues: number;
}

export interface ActivitySlots {
  maxConcurrentActivityTaskExecutions: number;
  maxConcurrentLocalActivityExecutions: number;
}

/** The slots of one money queue's worker: its share of the process's pool-sized budget. */
export function moneyQueueSlots({
  poolMax,
  slotsPerConnection = DEFAULT_ACTIVITY_SLOTS_PER_CONNECTION,
  moneyQueues,
}: ActivitySlotSettings): ActivitySlots {
  const share = Math.floor((poolMax * slotsPerConnection) / Math.max(1, moneyQueues));
  return {
    maxConcurrentActivityTaskExecutions: Math.max(1, Math.floor(share / 2)),
    maxConcurrentLocalActivityExecutions: Math.max(1, Math.ceil(share / 2)),
  };
}

/**
 * The slots of the worker of `taskQueue` among `taskQueues` (the process's), given which one is
 * the delivery queue.
 */
export function activitySlots(
  settings: Omit<ActivitySlotSettings, 'moneyQueues'>,
  taskQueue: string,
  taskQueues: readonly string[],
  deliveryQueue: string,
): ActivitySlots {
  const moneyQueues = taskQueues.filter((queue) => queue !== deliveryQueue).length;
  if (taskQueue === deliveryQueue) {
    // Delivery steps run as regular activities; its local activities (none today) get a money share.
    return {
      maxConcurrentActivityTaskExecutions: DELIVERY_STEP_SLOTS,
      maxConcurrentLocalActivityExecutions: moneyQueueSlots({ ...settings, moneyQueues: Math.max(1, moneyQueues) })
        .maxConcurrentLocalActivityExecutions,
    };
  }
  return moneyQueueSlots({ ...settings, moneyQueues });
}

/** The activity and local activity slots a compiled worker runs with (its tuner's fixed sizes; null: another tuner). */
export function compiledSlots(tuner: unknown): { activities: number; localActivities: number } | null {
  const t = tuner as {
    activityTaskSlotSupplier?: { type?: string; numSlots?: number };
    localActivityTaskSlotSupplier?: { type?: string; numSlots?: number };
  } | null;
  const activities = t?.activityTaskSlotSupplier;
  const local = t?.localActivityTaskSlotSupplier;
  if (activities?.type !== 'fixed-size' || local?.type !== 'fixed-size') return null;
  return { activities: activities.numSlots ?? 0, localActivities: local.numSlots ?? 0 };
}
