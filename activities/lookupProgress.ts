import { Context } from '@temporalio/activity';
import type { LookupProgress, LookupResume } from '../src/providers/types';

/**
 * How an activity's provider lookup of several calls resumes (decision 0064): each fact the
 * lookup learns between calls (an object id found, the replay window passed) is heartbeated, and a
 * retried attempt of the same activity (the same record, the same question) starts from the last
 * details heartbeated instead of starting over. The reconciling activities' proxies have a
 * heartbeatTimeout, so a worker lost mid-lookup is noticed before the attempt's own timeout.
 * Outside an activity (a script, a test calling the factory), or in a local activity (which has
 * no heartbeat; its retries are the workflow's), there is nothing to resume: undefined, a lookup
 * from the start.
 */
export function lookupResume(): LookupResume | undefined {
  let ctx: Context;
  try {
    ctx = Context.current();
  } catch {
    return undefined;
  }
  if (ctx.info.isLocal) return undefined;
  const from = progressOf(ctx.info.heartbeatDetails);
  let progress = from;
  // Alive from the start: the first provider call may take up to its own timeout.
  ctx.heartbeat(progress);
  return {
    from,
    learned: (fact) => {
      progress = { ...progress, ...fact };
      ctx.heartbeat(progress);
    },
  };
}

/** Earlier details, read defensively: only the facts this code knows, each of its type. */
function progressOf(details: unknown): LookupProgress {
  if (typeof details !== 'object' || details === null) return {};
  const { objectId, replayPassed } = details as Record<string, unknown>;
  return {
    ...(typeof objectId === 'string' && objectId ? { objectId } : {}),
    ...(replayPassed === true ? { replayPassed: true } : {}),
  };
}
