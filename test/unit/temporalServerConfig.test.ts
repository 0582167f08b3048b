import YAML from 'yaml';
import { dynamicConfigOverrides } from '../../bench/stack';
import { devServerArgs } from '../../dev/infra/temporalDevServer';
import { downloadedDevServerOptions } from '../../dev/infra/temporal';
import {
  DYNAMIC_CONFIG,
  OUR_TUNING,
  renderDynamicConfig,
  renderServerConfig,
  renderUiConfig,
  temporalServerPorts,
} from '../../dev/infra/temporalServerConfig';
import { freeTemporalFrontendPort } from '../../dev/stack/clusterChild';

/** The real Temporal server's config for `npm run cluster`: the port scheme and the rendered YAML. */
describe('Temporal server config', () => {
  it('derives one gRPC and one membership port per service from the frontend port', () => {
    expect(temporalServerPorts(7233)).toEqual({
      frontend: { grpc: 7233, membership: 6933, http: 7243 },
      history: { grpc: 7234, membership: 6934 },
      matching: { grpc: 7235, membership: 6935 },
      worker: { grpc: 7236, membership: 6936 },
    });
  });

  it('refuses a frontend port whose derived ports leave the unprivileged range', () => {
    expect(() => temporalServerPorts(1200)).toThrow(/outside 1024-65535/);
    expect(() => temporalServerPorts(65530)).toThrow(/outside 1024-65535/);
  });

  it('refuses a frontend port whose membership ports the server cannot store (smallint, at most 32767)', () => {
    expect(() => temporalServerPorts(40_000)).toThrow(/membership ports .* above 32767/);
    expect(temporalServerPorts(33_063).worker.membership).toBe(32_766);
  });

  it('picks free cluster ports that the server accepts', async () => {
    for (let i = 0; i < 20; i++) {
      const port = await freeTemporalFrontendPort();
      expect(() => temporalServerPorts(port)).not.toThrow();
    }
  });

  it('renders a postgres12 config with each service on its own loopback ports', () => {
    const config = YAML.parse(
      renderServerConfig({
        ports: temporalServerPorts(17233),
        postgres: { host: '127.0.0.1', port: 5433, user: 'postgres', password: 'p@ss: "x"' },
        databases: { main: 'temporal', visibility: 'temporal_visibility' },
        numHistoryShards: 4,
        dynamicConfigFile: '/data/temporal/server/dynamic-config.yaml',
        logLevel: 'warn',
      }),
    );

    expect(config.persistence.numHistoryShards).toBe(4);
    expect(config.persistence.datastores[config.persistence.defaultStore].sql).toMatchObject({
      pluginName: 'postgres12',
      databaseName: 'temporal',
      connectAddr: '127.0.0.1:5433',
      user: 'postgres',
      password: 'p@ss: "x"',
    });
    expect(config.persistence.datastores[config.persistence.visibilityStore].sql).toMatchObject({
      pluginName: 'postgres12',
      databaseName: 'temporal_visibility',
    });
    expect(config.services.frontend.rpc).toEqual({
      grpcPort: 17233,
      membershipPort: 16933,
      bindOnIP: '127.0.0.1',
      httpPort: 17243,
    });
    expect(config.services.history.rpc).toEqual({ grpcPort: 17234, membershipPort: 16934, bindOnIP: '127.0.0.1' });
    expect(config.services.matching.rpc.grpcPort).toBe(17235);
    expect(config.services.worker.rpc.grpcPort).toBe(17236);
    expect(config.global.membership).toEqual({ maxJoinDuration: '10s', broadcastAddress: '127.0.0.1' });
    expect(config.clusterMetadata.clusterInformation.active.rpcAddress).toBe('127.0.0.1:17233');
    expect(config.publicClient.hostPort).toBe('127.0.0.1:17233');
    expect(config.dynamicConfigClient.filepath).toBe('/data/temporal/server/dynamic-config.yaml');
  });

  it('renders dynamic config in the server file format, with the keys the product depends on', () => {
    const dynamic = YAML.parse(renderDynamicConfig());

    expect(dynamic['system.forceSearchAttributesCacheRefreshOnRead']).toEqual([{ value: true, constraints: {} }]);
    expect(dynamic['frontend.enableExecuteMultiOperation']).toEqual([{ value: true, constraints: {} }]);
    expect(dynamic['frontend.namespaceRPS.visibility']).toEqual([{ value: 100, constraints: {} }]);
    // A task whose worker died is retried within 30 s, not after up to 10 minutes.
    expect(dynamic['history.workflowTaskRetryMaxInterval']).toEqual([{ value: '30s', constraints: {} }]);
    expect(Object.keys(dynamic).sort()).toEqual(Object.keys(DYNAMIC_CONFIG).sort());
  });

  it('points the UI server at the frontend, on loopback, without auth', () => {
    expect(YAML.parse(renderUiConfig({ frontendGrpcPort: 7233, uiPort: 8233 }))).toMatchObject({
      temporalGrpcAddress: '127.0.0.1:7233',
      host: '127.0.0.1',
      port: 8233,
      auth: { enabled: false },
    });
  });
});

describe('the dev server of tests and npm start', () => {
  it('runs with our tuning too (eager activities, the workflow task retry cap)', () => {
    const args = devServerArgs({ cliPath: 'temporal', port: 7233 });
    const values = args.filter((_, i) => args[i - 1] === '--dynamic-config-value');
    expect(values).toEqual(
      expect.arrayContaining([
        'system.enableActivityEagerExecution=true',
        'history.workflowTaskRetryMaxInterval="30s"',
        'history.transferProcessorMaxPollRPS=200',
      ]),
    );
    expect(Object.keys(OUR_TUNING).every((key) => values.some((v) => v.startsWith(`${key}=`)))).toBe(true);
  });

  it('serves its metrics on the port asked for, and only then', () => {
    const args = devServerArgs({ cliPath: 'temporal', port: 7233, metricsPort: 9797 });
    expect(args[args.indexOf('--metrics-port') + 1]).toBe('9797');
    expect(devServerArgs({ cliPath: 'temporal', port: 7233 })).not.toContain('--metrics-port');
  });

  it("sets an experiment's dynamic config over our tuning, once per key", () => {
    const args = devServerArgs({
      cliPath: 'temporal',
      port: 7233,
      dynamicConfigOverrides: { 'history.shardIOConcurrency': 4, 'history.transferProcessorMaxPollRPS': 50 },
    });
    const values = args.filter((_, i) => args[i - 1] === '--dynamic-config-value');
    expect(values).toContain('history.shardIOConcurrency=4');
    expect(values.filter((v) => v.startsWith('history.transferProcessorMaxPollRPS='))).toEqual([
      'history.transferProcessorMaxPollRPS=50',
    ]);
  });

  it('the dev server @temporalio/testing downloads when no CLI is found gets the same flags', () => {
    const opts = { port: 7233, metricsPort: 9797, dynamicConfigOverrides: { 'history.shardIOConcurrency': 4 } };
    const downloaded = downloadedDevServerOptions(opts).extraArgs ?? [];
    const cli = devServerArgs({ cliPath: 'temporal', ...opts });
    const flagValues = (args: string[], flag: string) => args.filter((_, i) => args[i - 1] === flag);
    expect(flagValues(downloaded, '--dynamic-config-value').sort()).toEqual(
      flagValues(cli, '--dynamic-config-value').sort(),
    );
    expect(flagValues(downloaded, '--dynamic-config-value')).toContain('history.shardIOConcurrency=4');
    expect(flagValues(downloaded, '--metrics-port')).toEqual(['9797']);
    expect(downloadedDevServerOptions({ port: 7233 }).extraArgs).not.toContain('--metrics-port');
  });
});

describe("the bench's dynamic config knob (BENCH_TEMPORAL_DYNAMIC_CONFIG)", () => {
  it('reads a JSON object, and nothing when unset or blank', () => {
    expect(dynamicConfigOverrides('{"history.shardIOConcurrency":4}')).toEqual({ 'history.shardIOConcurrency': 4 });
    expect(dynamicConfigOverrides(undefined)).toEqual({});
    expect(dynamicConfigOverrides(' ')).toEqual({});
  });

  it('refuses anything but a JSON object, naming the variable', () => {
    for (const raw of ['history.shardIOConcurrency=4', '[1]', '4', 'null']) {
      expect(() => dynamicConfigOverrides(raw)).toThrow(/BENCH_TEMPORAL_DYNAMIC_CONFIG must be a JSON object/);
    }
  });
});
