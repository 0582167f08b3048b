import { defineSignal } from '@temporalio/workflow';

/** The dispute workflow's messages, defined once for the API and the workflow. Id: `dispute-<disputeId>`. */
export interface DisputeWorkflowInput {
  disputeId: string;
  paymentId: string;
  merchantId: string;
  /** When the dispute opened and when its evidence is due (epoch ms): the reminder and the deadline. */
  openedAtMs: number;
  evidenceDueByMs: number;
  callbackRetryInitialSeconds: number;
  /** false when the payment has no callbackUrl, so there is nothing to deliver. */
  callbacks: boolean;
  /** Continue-as-new at a wait once a run has this many events (default 1,000; tests lower it). */
  historyEventLimit?: number;
  /**
   * A check the processor answers with nothing the code knows (a status nobody knows, no answer)
   * is asked again; past this long the run is marked `Stuck` (default 3,600; tests lower it;
   * workflows/untilKnown.ts).
   */
  stuckAfterSeconds?: number;
  /** Set by continue-as-new: where the previous run stopped. */
  resume?: DisputeCursor;
}

/** What a continued run needs to go on where the previous one stopped. */
export interface DisputeCursor {
  reminded: boolean;
  providerEvent: boolean;
  /** After the deadline: the interval reached (it doubles to a day) and when the next check is due. */
  checkSeconds: number;
  nextCheckAtMs: number | null;
  runs: number;
}

export const disputeWorkflowId = (disputeId: string) => `dispute-${disputeId}`;

/** The processor reported a change of this dispute (verified webhook), or the API moved it. */
export const disputeEventSignal = defineSignal('disputeEvent');
