import type { Context } from '@temporalio/activity';
import type { WorkflowStartInput } from '@temporalio/client';
import { defaultPayloadConverter, type Headers } from '@temporalio/common';
import { currentLogContext, withLogContext } from '../../src/logContext';
import { requestIdActivityInterceptors, requestIdClientInterceptor } from '../../src/temporal/requestId';
import { REQUEST_ID_HEADER } from '../../workflows/requestId';

const header = (id: string): Headers => ({ [REQUEST_ID_HEADER]: defaultPayloadConverter.toPayload(id) });
const read = (headers: Headers) => defaultPayloadConverter.fromPayload(headers[REQUEST_ID_HEADER]!);

/** What reaches the next interceptor (the gRPC call) from a start. */
async function started(input: Partial<WorkflowStartInput>): Promise<WorkflowStartInput> {
  let seen: WorkflowStartInput | undefined;
  await requestIdClientInterceptor.startWithDetails!(
    { workflowType: 'paymentWorkflow', headers: {}, options: {} as WorkflowStartInput['options'], ...input },
    async (i) => {
      seen = i;
      return { runId: 'run', eagerlyStarted: false };
    },
  );
  return seen!;
}

describe('request id interceptors', () => {
  it("a start inside a request carries the request's id as memo and header; outside one, nothing", async () => {
    const inside = await withLogContext({ requestId: 'req-1' }, () => started({}));
    expect(inside.options.memo).toEqual({ requestId: 'req-1' });
    expect(read(inside.headers)).toBe('req-1');
    const outside = await started({});
    expect(outside.options.memo).toBeUndefined();
    expect(outside.headers).toEqual({});
  });

  it('keeps a memo and a header set by the caller', async () => {
    const input = { headers: header('req-own'), options: { memo: { requestId: 'req-own', other: 1 } } };
    const seen = await withLogContext({ requestId: 'req-1' }, () =>
      started(input as unknown as Partial<WorkflowStartInput>),
    );
    expect(seen.options.memo).toEqual({ requestId: 'req-own', other: 1 });
    expect(read(seen.headers)).toBe('req-own');
  });

  it('an activity with the header runs inside a log context (request id and workflow) and logs it through the SDK', async () => {
    const ctx = { info: { workflowExecution: { workflowId: 'payment-pay_1', runId: 'r' } } } as unknown as Context;
    const { inbound, outbound } = requestIdActivityInterceptors(ctx);
    const context = await inbound!.execute!({ args: [], headers: header('req-1') }, async () => currentLogContext());
    expect(context).toEqual({ requestId: 'req-1', workflowId: 'payment-pay_1' });
    expect(outbound!.getLogAttributes!({ a: 1 }, (attrs) => attrs)).toEqual({ a: 1, requestId: 'req-1' });

    const plain = requestIdActivityInterceptors(ctx);
    expect(await plain.inbound!.execute!({ args: [], headers: {} }, async () => currentLogContext())).toBeUndefined();
    expect(plain.outbound!.getLogAttributes!({ a: 1 }, (attrs) => attrs)).toEqual({ a: 1 });
  });
});
