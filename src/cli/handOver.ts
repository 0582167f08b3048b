import os from 'node:os';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';
import { temporalClientOptions } from '../temporal/connection';
import { payloadDataConverter } from '../temporal/payloadCodec';
import { subscriptionTaskQueue } from '../temporal/taskQueues';
import { handOverSignal } from '../../workflows/subscriptionApi';

export const HAND_OVER_USAGE = `  workflows:hand-over [--older-than-days N]  every running subscription run of this deployment
                                             (TEMPORAL_TASK_QUEUE) started more than N days ago
                                             (default 0: all) is asked to continue as new at
                                             once (decision 0084): run it after a deploy, so no
                                             run sleeps on in code older than the age bound`;

export class HandOverUsageError extends Error {}

export interface HandOverResult {
  /** Running subscription runs started before the cut-off (visibility). */
  found: number;
  signalled: number;
  /** Closed between the listing and the signal (nothing to hand over). */
  gone: number;
  olderThan: string;
}

export function handOverArguments(argv: string[]): { olderThanDays: number } {
  const { values } = parseArgs({
    args: argv,
    options: { 'older-than-days': { type: 'string' }, json: { type: 'boolean' } },
  });
  const raw = values['older-than-days'] ?? '0';
  if (!/^\d+$/.test(raw) || Number(raw) > 36_500) {
    throw new HandOverUsageError('--older-than-days must be a whole number of days from 0 to 36500');
  }
  return { olderThanDays: Number(raw) };
}

/**
 * Lists the running subscription workflows by visibility (their run's StartTime before the
 * cut-off) and signals `handOver` to each run: the run hands over at once (continue-as-new with
 * its cursor), also one asleep in a timer that began before the run age bound existed.
 */
export async function runHandOver(config: Config, argv: string[], now = new Date()): Promise<HandOverResult> {
  const { olderThanDays } = handOverArguments(argv);
  const olderThan = new Date(now.getTime() - olderThanDays * 86_400_000).toISOString();
  const connection = await Connection.connect(temporalClientOptions(config));
  try {
    const client = new Client({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      identity: `workflows:hand-over@${os.hostname()}`,
      ...payloadDataConverter(config.TEMPORAL_PAYLOAD_KEYS),
    });
    const query = [
      `WorkflowType = 'subscriptionWorkflow'`,
      `ExecutionStatus = 'Running'`,
      `TaskQueue = '${subscriptionTaskQueue(config.TEMPORAL_TASK_QUEUE)}'`,
      `StartTime < '${olderThan}'`,
    ].join(' AND ');
    const result: HandOverResult = { found: 0, signalled: 0, gone: 0, olderThan };
    for await (const wf of client.workflow.list({ query })) {
      result.found++;
      try {
        // The run listed: a run that handed over meanwhile is already young.
        await client.workflow.getHandle(wf.workflowId, wf.runId).signal(handOverSignal);
        result.signalled++;
      } catch (err) {
        if ((err as Error).name !== 'WorkflowNotFoundError') throw err;
        result.gone++;
      }
    }
    return result;
  } finally {
    await connection.close();
  }
}
