// The worker bundles this module: every workflow the worker runs is exported here.
export { probeWorkflow } from './probe';
export { paymentWorkflow, paymentWorkflowV2 } from './payment';
export { refundWorkflow, refundWorkflowV2 } from './refund';
export { sweepOrphanPaymentsWorkflow } from './sweepPayments';
export { sweepOrphansWorkflow } from './sweepOrphans';
export { subscriptionWorkflow } from './subscription';
export { merchantEventsWorkflow } from './merchantEvents';
export { outboxEmailWorkflow } from './outboxEmail';
export { disputeWorkflow } from './dispute';
export { eventDeliveriesWorkflow } from './eventDeliveries';
export { testClockWorkflow } from './testClock';
export { setupPageWorkflow } from './setupPage';
