import { isMainThread } from 'node:worker_threads';

/**
 * Preloaded into every thread of a worker process (`--require`, WORKER_NODE_ARGS in
 * dev/stack/stackParts.ts): in the SDK's workflow threads it turns the workflow stack-trace query
 * off, unless WORKFLOW_STACK_TRACES is on (docs/decisions.md, "Workflow stack traces are off").
 *
 * Why: for that query the SDK captures and source-maps a stack trace for every promise a workflow
 * makes, through a V8 promise hook: about 2 ms of worker CPU per payment or refund, a tenth of the
 * stack's throughput (bench/RESULTS.md). The SDK (1.24) has no option for it. Its workflow threads
 * install the hook through one shared object, `globalHandlers` (lib/workflow/vm-shared.js), when
 * they create their V8 context; without it the SDK runs as it does where V8 has no promise hooks:
 * the query answers "Workflow stack traces are not enabled on this worker", nothing else changes.
 * test/integration/workflowStackTraces.test.ts fails if an SDK upgrade moves or renames it.
 *
 * Not `v8.promiseHooks.createHook` itself: Node's AsyncLocalStorage, which the SDK's workflow
 * code uses, installs its own hook through it.
 */
/** The values src/config.ts's `flag` reads as on (the config is not loaded in these threads). */
const STACK_TRACES_ON = ['true', '1', 'yes'];

/** src/main/worker.ts reads it: a worker started without this preload warns (stack traces on). */
(globalThis as Record<symbol, unknown>)[Symbol.for('payment-platform.workflowThreadsPreload')] = true;

if (!isMainThread && !STACK_TRACES_ON.includes(process.env.WORKFLOW_STACK_TRACES ?? '')) {
  // Required here, not imported: only workflow threads need it. `setPromiseHook` is private in its typings.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { globalHandlers } = require('@temporalio/worker/lib/workflow/vm-shared') as {
    globalHandlers: { setPromiseHook(): void };
  };
  globalHandlers.setPromiseHook = () => undefined;
}
