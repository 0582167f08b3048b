import * as grpc from '@grpc/grpc-js';
import { Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { clientInterceptors } from '../../src/temporal/connection';

/**
 * The client's retry interceptor (src/temporal/grpcRetry.ts) against a real gRPC server that
 * answers DescribeNamespace as told: RESOURCE_EXHAUSTED (retried after ~2 s) or an empty answer.
 * The SDK's own interceptor fails the first two tests: it retries a cancelled call, and its retry
 * due after the connection closed throws "Channel has been shut down" from a timer.
 */
describe('Temporal client retries (cancellable retry interceptor)', () => {
  let server: grpc.Server;
  let address: string;
  let calls = 0;
  /** Answers, in order, for the next calls; when empty, RESOURCE_EXHAUSTED. */
  let script: ('busy' | 'ok')[] = [];

  const identity = (b: Buffer) => b;
  const describeNamespace: grpc.MethodDefinition<Buffer, Buffer> = {
    path: '/temporal.api.workflowservice.v1.WorkflowService/DescribeNamespace',
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  };

  beforeAll(async () => {
    server = new grpc.Server();
    server.addService(
      { DescribeNamespace: describeNamespace },
      {
        DescribeNamespace: (_call: unknown, done: grpc.sendUnaryData<Buffer>) => {
          calls++;
          if (script.shift() === 'ok') done(null, Buffer.alloc(0));
          else done({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'busy' });
        },
      },
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    address = `127.0.0.1:${port}`;
  });
  afterAll(() => server.forceShutdown());
  beforeEach(() => {
    calls = 0;
    script = [];
  });

  const connect = (interceptors = clientInterceptors()) => Connection.lazy({ address, interceptors });
  const describe_ = (connection: Connection) => connection.workflowService.describeNamespace({ namespace: 'default' });
  const until = async (check: () => boolean) => {
    for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(check()).toBe(true);
  };
  /**
   * The server has answered the first call busy, and the answer is back with the client well
   * within 300 ms: it is waiting to retry (a call cancelled before then is cancelled in flight).
   */
  const waitingToRetry = async () => {
    await until(() => calls === 1);
    await new Promise((r) => setTimeout(r, 300));
  };
  /** Past the first RESOURCE_EXHAUSTED backoff (1 s x 2, with 10 % jitter). */
  const pastBackoff = () => new Promise((r) => setTimeout(r, 2_600));

  it('a call cancelled while waiting to retry ends then and is not sent again', async () => {
    const connection = connect();
    const stop = new AbortController();
    const call = connection.withAbortSignal(stop.signal, () => describe_(connection));
    const settled = call.then(
      () => 'resolved',
      (err: { code?: number }) => err.code,
    );
    await waitingToRetry();
    stop.abort();
    // Ended at once, with the status it had (not after the backoff, not with an answer).
    expect(await settled).toBe(grpc.status.RESOURCE_EXHAUSTED);
    await pastBackoff();
    expect(calls).toBe(1);
    await connection.close();
  });

  it('a retry due after the connection closed ends the call with its last status, nothing thrown', async () => {
    const connection = connect();
    const call = describe_(connection).then(
      () => 'resolved',
      (err: { code?: number }) => err.code,
    );
    await until(() => calls === 1);
    await connection.close();
    expect(await call).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(calls).toBe(1);
  });

  it('still retries a busy answer, and answers with the retry', async () => {
    script = ['busy', 'ok'];
    const connection = connect();
    await expect(describe_(connection)).resolves.toBeDefined();
    expect(calls).toBe(2);
    await connection.close();
  });

  it('the same cancellation with the SDK interceptor: the call is sent again (why ours exists)', async () => {
    const connection = connect([makeGrpcRetryInterceptor(defaultGrpcRetryOptions())]);
    script = ['busy', 'ok'];
    const stop = new AbortController();
    const call = connection.withAbortSignal(stop.signal, () => describe_(connection));
    await waitingToRetry();
    stop.abort();
    await expect(call).resolves.toBeDefined();
    expect(calls).toBe(2);
    await connection.close();
  });
});
