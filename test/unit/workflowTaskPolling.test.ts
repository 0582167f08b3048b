import { noopMetricMeter } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import { compileWorkerOptions, toNativeWorkerOptions } from '@temporalio/worker/lib/worker-options';
import { WORKFLOW_TASK_POLLING, workflowTaskPolling } from '../../src/temporal/workflowTaskPolling';

/** What the SDK hands its core for these options: the polls a worker really runs. */
function nativePolling(options: object) {
  const compiled = compileWorkerOptions(
    { taskQueue: 'q', workflowBundle: { code: '' }, ...options },
    new DefaultLogger('ERROR'),
    noopMetricMeter,
  );
  const native = toNativeWorkerOptions({ ...compiled, buildId: 'test' });
  return { behavior: native.workflowTaskPollerBehavior, ratio: native.nonStickyToStickyPollRatio };
}

describe('workflow-task polling', () => {
  it('reaches the SDK as the number of polls asked for, half of them on the normal queue', () => {
    expect(nativePolling(workflowTaskPolling(24))).toEqual({
      behavior: { type: 'simple-maximum', maximum: 24 },
      ratio: 0.5,
    });
  });

  it("the SDK's documented maxConcurrentWorkflowTaskPolls is ignored (why the behaviour is set)", () => {
    expect(nativePolling({ maxConcurrentWorkflowTaskPolls: 24 }).behavior).toEqual({
      type: 'simple-maximum',
      maximum: 10,
    });
  });

  it('a worker polls 10, five on the normal queue', () => {
    expect(nativePolling(WORKFLOW_TASK_POLLING)).toEqual({
      behavior: { type: 'simple-maximum', maximum: 10 },
      ratio: 0.5,
    });
  });
});
