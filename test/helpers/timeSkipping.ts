import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection, type WorkflowClient, type WorkflowHandle } from '@temporalio/client';
import { InternalConnectionOptionsSymbol } from '@temporalio/client/lib/connection';
import { IllegalStateError } from '@temporalio/common';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { customSearchAttributes } from '../../workflows/searchAttributes';
import {
  locateTemporalTestServer,
  startTemporalTestServer,
  type RunningTestServer,
} from '../../dev/infra/temporalTestServer';
import { freeLoopbackPort } from '../../dev/infra/ports';
import { testStack } from '../setup/stackInfo';

// As in stack.ts: keep the SDK's worker chatter out of test output (whichever module loads first).
// Core's own logs too: its worker warns that the test server lacks capabilities of a real server.
const sdkLogLevel = (process.env.TEST_SDK_LOG_LEVEL as 'WARN' | undefined) ?? 'ERROR';
try {
  Runtime.install({
    logger: new DefaultLogger(sdkLogLevel),
    telemetryOptions: { logging: { filter: { core: sdkLogLevel, other: sdkLogLevel } } },
  });
} catch (err) {
  if (!(err instanceof IllegalStateError)) throw err;
}

/**
 * A TestWorkflowEnvironment with time skipping, bound to a Java test server this module starts.
 * The SDK's createTimeSkipping() would spawn the server itself, but gives it 5 s to answer (the
 * JVM takes 1-6 s on a loaded CI machine) and kills it with SIGKILL; so the server is started
 * with startTemporalTestServer (generous deadline, clean stop) and the environment connects to
 * it the way createTimeSkipping() does (connections with the test service enabled).
 */
class TimeSkippingEnvironment extends TestWorkflowEnvironment {
  private stopServer?: () => Promise<void>;

  static async connectTo(server: RunningTestServer, stopServer: () => Promise<void>): Promise<TimeSkippingEnvironment> {
    const internal = { [InternalConnectionOptionsSymbol]: { supportsTestService: true } };
    const nativeConnection = await NativeConnection.connect({ address: server.address, ...internal });
    // The Java server (grpc-java) refuses keepalive pings more often than every 5 minutes and
    // drops the connection ("excess pings"); the client's default is every 30 s.
    const connection = await Connection.connect({
      address: server.address,
      channelArgs: { 'grpc.keepalive_time_ms': 6 * 60_000, 'grpc.keepalive_permit_without_calls': 0 },
      ...internal,
    });
    const env = new TimeSkippingEnvironment(
      Runtime.instance(),
      { server: { type: 'existing' }, client: {}, plugins: [] },
      true,
      'existing',
      connection,
      nativeConnection,
      'default',
      server.address,
    );
    env.stopServer = stopServer;
    // A time-skipping sleep normally returns within seconds of wall time, whatever it skips. One
    // that does not is stuck (docs/notes.md): it fails at this deadline, so the test fails early
    // and leaves no call behind for its connection's close to break.
    const sleep = env.sleep;
    Object.defineProperty(env, 'sleep', {
      value: (duration: Parameters<typeof sleep>[0]) =>
        connection.withDeadline(Date.now() + SLEEP_DEADLINE_MS, () => sleep(duration)),
    });
    return env;
  }

  override async teardown(): Promise<void> {
    try {
      await super.teardown();
    } finally {
      await this.stopServer?.();
    }
  }
}

/** Wall time a time-skipping sleep may take before it counts as stuck. */
const SLEEP_DEADLINE_MS = Number(process.env.TEST_TIME_SKIPPING_SLEEP_DEADLINE_MS ?? 60_000);

/**
 * Starts a test server of this test file's own and returns an environment bound to it; its
 * teardown() also stops the server. One per file: time skipping is global to a server, so test
 * files running in parallel must not share one.
 */
export async function startTimeSkippingEnvironment(): Promise<TestWorkflowEnvironment> {
  const log = (msg: string) => process.stderr.write(`[time-skipping] ${msg}\n`);
  const located = await locateTemporalTestServer(log);
  if (!located) {
    // No Java or Maven: the SDK downloads a native test server (needs access to GitHub).
    log('No Java/Maven: letting @temporalio/testing download the test server...');
    const env = await TestWorkflowEnvironment.createTimeSkipping();
    await registerSearchAttributes(env);
    return env;
  }
  const logFile = path.join(os.tmpdir(), `temporal-test-server-${process.pid}-${Date.now()}.log`);
  const started = Date.now();
  const server = await startTemporalTestServer({ located, port: await freeLoopbackPort(), logFile });
  log(`test server ${server.address} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const stopServer = async () => {
    await server.stop();
    fs.rmSync(logFile, { force: true });
  };
  try {
    const env = await TimeSkippingEnvironment.connectTo(server, stopServer);
    await registerSearchAttributes(env);
    return env;
  } catch (err) {
    await stopServer();
    throw err;
  }
}

/** The platform's workflows upsert these; the test server rejects unregistered ones. */
async function registerSearchAttributes(env: TestWorkflowEnvironment): Promise<void> {
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(
      customSearchAttributes.map((key) => [
        key.name,
        temporal.api.enums.v1.IndexedValueType[`INDEXED_VALUE_TYPE_${key.type}`],
      ]),
    ),
  });
}

/**
 * For a test file: a time-skipping environment started in beforeAll and torn down in afterAll.
 * A cold run also fetches the server with Maven first (about a minute), hence the long timeout.
 *
 * `perTest`: a server of its own for every test, started in beforeEach after the previous test's
 * is torn down. A test that leaves its server stuck (a refused workflow task, see untilNoTimerDue)
 * then takes only itself down. The previous server's teardown is best effort: a worker of a hung
 * test may still hold its connection.
 */
export function useTimeSkippingEnvironment(opts: { perTest?: boolean } = {}): () => TestWorkflowEnvironment {
  let env: TestWorkflowEnvironment | undefined;
  if (opts.perTest) {
    beforeEach(async () => {
      const previous = env;
      env = undefined;
      await previous?.teardown().catch((err: unknown) => {
        process.stderr.write(`[time-skipping] previous test's environment: ${(err as Error).message}\n`);
      });
      env = await startTimeSkippingEnvironment();
    }, 300_000);
  } else {
    beforeAll(async () => {
      env = await startTimeSkippingEnvironment();
    }, 300_000);
  }
  afterAll(async () => {
    await env?.teardown();
  });
  return () => {
    if (!env) throw new Error('The time-skipping environment is not started (use it inside a test).');
    return env;
  };
}

/** The workflow bundle this run ships (globalSetup builds it with `npm run build`'s function). */
export function shippedWorkflowBundle(): { codePath: string } {
  return { codePath: testStack().workflowBundlePath };
}

let shippedWorkerCount = 0;

/**
 * Runs a worker of the shipped bundle with these (stubbed) activities on a task queue of its
 * own (`<prefix>-<pid>-<n>`) while `drive` runs, and returns what `drive` returned.
 */
export async function withShippedWorker<T>(
  env: TestWorkflowEnvironment,
  taskQueuePrefix: string,
  activities: object,
  drive: (taskQueue: string) => Promise<T>,
): Promise<T> {
  const taskQueue = `${taskQueuePrefix}-${process.pid}-${++shippedWorkerCount}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: shippedWorkflowBundle(),
    activities,
  });
  return worker.runUntil(() => drive(taskQueue));
}

/** Every run's history of a workflow's chain, oldest first (continue-as-new links the runs). */
export function runHistories(
  env: TestWorkflowEnvironment,
  workflowId: string,
): Promise<temporal.api.history.v1.IHistoryEvent[][]> {
  return chainHistories(env.client.workflow, workflowId);
}

async function chainHistories(
  client: WorkflowClient,
  workflowId: string,
): Promise<temporal.api.history.v1.IHistoryEvent[][]> {
  const runs: temporal.api.history.v1.IHistoryEvent[][] = [];
  let runId: string | undefined;
  for (;;) {
    const events = (await client.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    runs.unshift(events);
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
    if (!runId) return runs;
  }
}

/** A test this slow (wall time) has most likely hung: its workflows are described before they go. */
const SLOW_TEST_MS = Number(process.env.TEST_SLOW_TEST_MS ?? 60_000);

/**
 * The handles a suite pushes the workflows it starts to; each is terminated after its test: a
 * workflow a failed test leaves running would keep the test server from skipping time.
 *
 * A test that took over a minute (a hung test, docs/notes.md) first writes what each of its
 * workflows still waits on to stderr: its status, pending activities and workflow task, and its
 * last history events. That is the evidence a hang needs, and a normal run prints nothing.
 */
export function terminatedAfterEachTest(): WorkflowHandle[] {
  const started: WorkflowHandle[] = [];
  let testStartedAt = 0;
  beforeEach(() => {
    testStartedAt = Date.now();
  });
  afterEach(async () => {
    const handles = started.splice(0);
    if (Date.now() - testStartedAt > SLOW_TEST_MS) {
      for (const handle of handles) await describeStuck(handle).catch(() => undefined);
    }
    for (const handle of handles) await handle.terminate('test over').catch(() => undefined);
  });
  return started;
}

/**
 * What a workflow of a slow test still waits on, on stderr: the latest run's status, pending
 * activities and workflow task, and its last events; and, for every run of its chain, the regular
 * activities it scheduled and never saw finish (the test server keeps time locked for an activity
 * left so when a run continues as new: temporalio/sdk-java #1138).
 */
async function describeStuck(handle: WorkflowHandle): Promise<void> {
  const latest = handle.client.getHandle(handle.workflowId);
  const { raw, status } = await latest.describe();
  const pendingActivities = (raw.pendingActivities ?? []).map((a) => ({
    type: a.activityType?.name,
    state: a.state,
    attempt: a.attempt,
  }));
  const runs = await chainHistories(handle.client, handle.workflowId);
  const unfinished = runs.map((events, run) => ({ run, activities: unfinishedActivities(events) }));
  const last = runs[runs.length - 1] ?? [];
  const lastEvents = last
    .slice(-12)
    .map((e) => `${String(e.eventId)}:${temporal.api.enums.v1.EventType[e.eventType!]}`);
  process.stderr.write(
    `[time-skipping] slow test: ${handle.workflowId} ${status.name}, ${runs.length} run(s); ` +
      `pending activities ${JSON.stringify(pendingActivities)}; pending workflow task ` +
      `${JSON.stringify(raw.pendingWorkflowTask ?? null)}; activities never finished, by run ` +
      `${JSON.stringify(unfinished.filter((u) => u.activities.length > 0))}; last events ${lastEvents.join(' ')}\n`,
  );
}

/** The regular activities a run scheduled whose completion, failure, timeout or cancellation it never recorded. */
function unfinishedActivities(events: temporal.api.history.v1.IHistoryEvent[]): string[] {
  const scheduled = new Map<string, string>();
  for (const e of events) {
    const a = e.activityTaskScheduledEventAttributes;
    if (a) scheduled.set(String(e.eventId), `${String(e.eventId)}:${a.activityType?.name ?? '?'}`);
    const ended =
      e.activityTaskCompletedEventAttributes ??
      e.activityTaskFailedEventAttributes ??
      e.activityTaskTimedOutEventAttributes ??
      e.activityTaskCanceledEventAttributes;
    if (ended?.scheduledEventId != null) scheduled.delete(String(ended.scheduledEventId));
  }
  return [...scheduled.values()];
}

/**
 * Workflow time (ms) a signal's or an Update's workflow task may take, at most, on a loaded machine.
 * Between skips the test server's clock runs at wall speed.
 */
const TASK_QUIET_MS = 15_000;

/**
 * Waits until the workflow's current run has no workflow task in flight and no timer due within
 * TASK_QUIET_MS of workflow time, skipping past any that is; call it before a signal or an Update.
 *
 * Why: a signal or Update wakes a workflow waiting on `condition(fn, timeout)`, and the workflow
 * cancels that timeout's timer. If the timer fired while that task ran, the Java test server refuses
 * the task's CancelTimer ("invalid history builder state for action") and never gives the run
 * another task: the test hangs (temporalio/sdk-java #2606, #3088; a real server accepts it). Steps
 * of exactly a period's length land a few milliseconds before the period's timer, so a test that
 * skips 30 days and then cancels hit it under load (docs/notes.md).
 */
export async function untilNoTimerDue(env: TestWorkflowEnvironment, workflowId: string): Promise<void> {
  const { EventType } = temporal.api.enums.v1;
  const giveUpAt = Date.now() + 60_000;
  for (;;) {
    if (Date.now() > giveUpAt) throw new Error(`${workflowId}: a workflow task or timer kept it busy for 60 s`);
    const events = (await env.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const last = events[events.length - 1]?.eventType;
    if (last === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED || last === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      continue;
    }
    const due = soonestOpenTimer(events);
    if (due === undefined) return;
    const inMs = due - (await env.currentTimeMs());
    if (inMs > TASK_QUIET_MS) return;
    await env.sleep(Math.max(inMs, 0) + 1);
  }
}

/** When the soonest timer a run started and has not seen fire or cancelled is due (epoch ms). */
export function soonestOpenTimer(events: temporal.api.history.v1.IHistoryEvent[]): number | undefined {
  const open = new Map<string, number>();
  for (const e of events) {
    const started = e.timerStartedEventAttributes;
    if (started) open.set(String(e.eventId), tsToMs(e.eventTime) + tsToMs(started.startToFireTimeout));
    const ended = e.timerFiredEventAttributes ?? e.timerCanceledEventAttributes;
    if (ended?.startedEventId != null) open.delete(String(ended.startedEventId));
  }
  return open.size === 0 ? undefined : Math.min(...open.values());
}
