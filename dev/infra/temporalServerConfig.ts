import YAML from 'yaml';

/**
 * The pure half of `temporalServer.ts`: the port layout and the YAML the real Temporal server
 * (v1.29.1), its dynamic config and the UI server read. No I/O here, so it is unit-tested as is.
 */

export interface ServicePorts {
  grpc: number;
  membership: number;
}

export interface TemporalServerPorts {
  frontend: ServicePorts & { http: number };
  history: ServicePorts;
  matching: ServicePorts;
  worker: ServicePorts;
}

export type TemporalServiceName = 'frontend' | 'history' | 'matching' | 'worker';
export const TEMPORAL_SERVICES: readonly TemporalServiceName[] = ['frontend', 'history', 'matching', 'worker'];

/** Distance between a service's gRPC port and its membership (gossip) port: 7233 -> 6933 as in Temporal's own configs. */
export const MEMBERSHIP_PORT_OFFSET = -300;
/**
 * Each service records its membership port in Temporal's `cluster_membership.rpc_port`, a
 * PostgreSQL smallint: a higher port makes the service exit at start ("out of range for type smallint").
 */
export const MAX_MEMBERSHIP_PORT = 32_767;
/** Frontend HTTP API port relative to the frontend gRPC port: 7233 -> 7243 as in Temporal's own configs. */
export const FRONTEND_HTTP_PORT_OFFSET = 10;

/**
 * Every service is its own process, so each needs its own gRPC and membership port. From the
 * frontend port P: gRPC P (frontend), P+1 (history), P+2 (matching), P+3 (worker); membership
 * the same minus 300; the frontend's HTTP API on P+10. With P = 7233 that is 7233-7236,
 * 6933-6936 and 7243. All bind to 127.0.0.1 only.
 */
export function temporalServerPorts(frontendPort: number): TemporalServerPorts {
  const at = (offset: number): ServicePorts => ({
    grpc: frontendPort + offset,
    membership: frontendPort + offset + MEMBERSHIP_PORT_OFFSET,
  });
  const ports: TemporalServerPorts = {
    frontend: { ...at(0), http: frontendPort + FRONTEND_HTTP_PORT_OFFSET },
    history: at(1),
    matching: at(2),
    worker: at(3),
  };
  const all = allPorts(ports);
  if (!Number.isInteger(frontendPort) || all.some((p) => p < 1024 || p > 65535)) {
    throw new Error(
      `Temporal frontend port ${frontendPort} leaves the derived ports (${all.join(', ')}) outside 1024-65535`,
    );
  }
  const membership = TEMPORAL_SERVICES.map((name) => ports[name].membership);
  if (membership.some((p) => p > MAX_MEMBERSHIP_PORT)) {
    throw new Error(
      `Temporal frontend port ${frontendPort} gives membership ports (${membership.join(', ')}) above ` +
        `${MAX_MEMBERSHIP_PORT}, which the server cannot store (cluster_membership.rpc_port is a smallint)`,
    );
  }
  return ports;
}

export function allPorts(ports: TemporalServerPorts): number[] {
  return [...TEMPORAL_SERVICES.flatMap((name) => [ports[name].grpc, ports[name].membership]), ports.frontend.http];
}

export interface ServerConfigInput {
  ports: TemporalServerPorts;
  postgres: { host: string; port: number; user: string; password: string };
  databases: { main: string; visibility: string };
  /** Fixed for the life of the database: the server refuses to start with another value. */
  numHistoryShards: number;
  /** Absolute path of the dynamic config YAML. */
  dynamicConfigFile: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}

const LOOPBACK = '127.0.0.1';
/**
 * How long a starting service waits to join the gossip ring through the hosts the membership
 * table lists. A restarted service joins the live ones at once; the wait only matters when the
 * listed hosts are dead (a cold start after a crash), where the server's default 10 s beats the
 * 30 s of Temporal's sample configs.
 */
export const MEMBERSHIP_MAX_JOIN_DURATION = '10s';

/** The server config (`<root>/<config>/<env>.yaml`), one file for all four service processes. */
export function renderServerConfig(input: ServerConfigInput): string {
  const { ports, postgres } = input;
  const datastore = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${postgres.host}:${postgres.port}`,
      connectProtocol: 'tcp',
      user: postgres.user,
      password: postgres.password,
      // Per process: four processes share the PostgreSQL's max_connections.
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (name: TemporalServiceName) => ({
    rpc: {
      grpcPort: ports[name].grpc,
      membershipPort: ports[name].membership,
      bindOnIP: LOOPBACK,
      ...(name === 'frontend' ? { httpPort: ports.frontend.http } : {}),
    },
  });
  const frontendAddress = `${LOOPBACK}:${ports.frontend.grpc}`;
  const config = {
    log: { stdout: true, level: input.logLevel },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: input.numHistoryShards,
      datastores: {
        'postgres-default': datastore(input.databases.main, 10),
        'postgres-visibility': datastore(input.databases.visibility, 4),
      },
    },
    global: {
      membership: { maxJoinDuration: MEMBERSHIP_MAX_JOIN_DURATION, broadcastAddress: LOOPBACK },
    },
    services: Object.fromEntries(TEMPORAL_SERVICES.map((name) => [name, service(name)])),
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: frontendAddress,
          httpAddress: `${LOOPBACK}:${ports.frontend.http}`,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    namespaceDefaults: { archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } } },
    publicClient: { hostPort: frontendAddress },
    dynamicConfigClient: { filepath: input.dynamicConfigFile, pollInterval: '10s' },
  };
  return YAML.stringify(config);
}

/**
 * Dynamic config, keys verified in go.temporal.io/server@v1.29.1 common/dynamicconfig/constants.go.
 * Three groups: what `temporal server start-dev` v1.5.1 sets (temporalcli/commands.server.go and
 * temporalcli/devserver/server.go), which the test suite was written against; defaults of 1.29.1
 * pinned because the product depends on them (Update-with-Start, workflow Updates, Worker
 * Deployment Versioning, Schedules), so an upgrade that flips a default fails loudly here rather
 * than in production; and our own tuning. The last two are production's too
 * (deploy/temporal/dynamicconfig.yaml, mounted by docker-compose.yml).
 */
const DEV_SERVER_PARITY: Readonly<Record<string, unknown>> = {
  // New search attributes are visible at once (no per-host cache lag).
  'system.forceSearchAttributesCacheRefreshOnRead': true,
  // With that cache bypassed, persistence QPS limits raised in the same ratio.
  'frontend.persistenceMaxQPS': 10000,
  'history.persistenceMaxQPS': 45000,
  // Visibility RPS per namespace per frontend (default 10; the UI and list calls need more).
  'frontend.namespaceRPS.visibility': 100,
  // Host-level mutable state cache (default 128000 entries; this is a small machine).
  'history.hostLevelCacheMaxSize': 8096,
};

/** Our tuning, which the dev server of tests and `npm start` gets too (temporalDevServer.ts). */
export const OUR_TUNING: Readonly<Record<string, unknown>> = {
  // A workflow task retried after failures gets its start-to-close timeout stretched by a
  // backoff (default up to 10 min), so a task started by a worker that then died is not retried
  // for up to 10 minutes. In the 30-minute chaos run (a worker killed every ~10 s) renewals
  // stalled that long after their worker died. 30 s still slows a task that fails every time.
  'history.workflowTaskRetryMaxInterval': '30s',
  // An activity scheduled on the workflow's own task queue (a payment attempt, an invoice
  // charge) goes back to the worker in the answer to the workflow task that scheduled it,
  // instead of a round through matching (~35 ms on the dev server per dispatch).
  'system.enableActivityEagerExecution': true,
  // A new workflow or activity task reaches matching when its history shard's transfer queue
  // reader loads it, and that reader is rate limited per shard (default 20 reads/s). A shard
  // asked for more than 20 reads/s (the dev server has one shard; ten payments a second do it) made
  // tasks wait for the next read, about 40 ms per dispatch (bench/RESULTS.md, "The 40 ms
  // dispatch wait"). 200/s bounds that wait at 5 ms; a busy shard's reads stay batched.
  'history.transferProcessorMaxPollRPS': 200,
  // One partition per task queue, not 4. A task written to a partition that no poller is waiting
  // on waits there (about 2 s here) until one is: with a worker's few normal-queue pollers busy,
  // 4.7 % of the bench floor's new workflows did (bench/RESULTS.md, "The 2 s dispatch stalls").
  // One partition carried 93 floor Update-with-Starts a second on the dev server, far above this
  // product's rate per queue. Raise both with enough pollers for every partition if one queue ever
  // needs more; lowering them on a running cluster: writes first, let the backlog drain, then reads.
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
  // Measured and left at the server's defaults (bench/RESULTS.md, "Twentieth issue-12 session"):
  // `history.shardIOConcurrency` 4 (a renewal storm was slower on average than with 1) and, on the dev
  // server, `history.hostLevelCacheMaxSize` 128,000 instead of the CLI's 8,096 (no faster at 10,000).
  // Try another setting with BENCH_TEMPORAL_DYNAMIC_CONFIG before adding it here.
};

/** The dynamic config production runs with: pinned defaults the product needs, and our tuning. */
export const PRODUCTION_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = {
  // Defaults in 1.29.1, pinned (see above).
  'frontend.enableExecuteMultiOperation': true,
  'frontend.enableUpdateWorkflowExecution': true,
  'frontend.enableUpdateWorkflowExecutionAsyncAccepted': true,
  'system.enableDeploymentVersions': true,
  'frontend.workerVersioningWorkflowAPIs': true,
  'frontend.enableSchedules': true,
  'worker.enableScheduler': true,

  ...OUR_TUNING,
};

/** What `npm run cluster` runs with. */
export const DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = { ...DEV_SERVER_PARITY, ...PRODUCTION_DYNAMIC_CONFIG };

export function renderDynamicConfig(values: Readonly<Record<string, unknown>> = DYNAMIC_CONFIG): string {
  return YAML.stringify(
    Object.fromEntries(Object.entries(values).map(([key, value]) => [key, [{ value, constraints: {} }]])),
  );
}

/** The UI server config (ui-server v2 `server/config`): local only, no auth, talks to the frontend. */
export function renderUiConfig(input: { frontendGrpcPort: number; uiPort: number; codecEndpoint?: string }): string {
  return YAML.stringify({
    // The API's /codec: the UI shows payloads decrypted (decision 0078).
    ...(input.codecEndpoint ? { codec: { endpoint: input.codecEndpoint } } : {}),
    temporalGrpcAddress: `${LOOPBACK}:${input.frontendGrpcPort}`,
    host: LOOPBACK,
    port: input.uiPort,
    enableUi: true,
    defaultNamespace: 'default',
    auth: { enabled: false },
    cors: { cookieInsecure: true },
    hideLogs: true,
    // No call home for a version check from a machine that may have no internet.
    notifyOnNewVersion: false,
  });
}
