import type { ActivityDeps } from './deps';
import { createProbeActivities } from './probe';

export type { ActivityDeps } from './deps';

export function createActivities(deps: ActivityDeps) {
  return {
    ...createProbeActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
