/**
 * A test clock's advance workflow (decision 0090), defined once for the API and the worker.
 * Workflow id: `test-clock-<clockId>` (testClockWorkflowId), one run chain per advance.
 */
export { testClockWorkflowId } from './subscriptionApi';

export interface TestClockWorkflowInput {
  clockId: string;
  /** Continue-as-new: where the advance stands (the clock's time, each subscription's next due time). */
  resume?: { nowMs: number; due: Record<string, number | null> };
}
