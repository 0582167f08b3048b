import { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  ApplicationFailure,
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import { Payment } from '../../db/entities';
import { AppError } from '../../errors';
import { isDeadlineExceeded, isTemporalUnreachable, isUpdateAborted } from '../../temporal/grpcErrors';
import { firstOfAnswerAndHint, providerTrouble, workflowServiceUnavailable } from '../temporalOutcome';
import { temporalReachable } from '../../temporal/reachability';
import { isId, newId } from '../../ids';
import { findPaymentView, insertPayment, presentPayment, type PaymentView } from '../../domain/payments';
import type { ProviderRegistry } from '../../providers/registry';
import type { OutcomeHintListener, PaymentOutcomeHint } from '../../db/outcomeHints';
import { paymentWorkflowV2 } from '../../../workflows/payment';
import { PAYMENT_UPDATE_REFUSED, submitPaymentUpdate, type SubmitOutcome } from '../../../workflows/paymentApi';
import { paymentWorkflowStartOptions } from '../../temporal/paymentWorkflowOptions';
import type { Caller } from '../context';
import { AUTH_ERRORS, defineRoute } from '../routing';
import { processorForCreate } from '../providerFor';
import { providerRejection } from '../providerRejection';
import {
  checkAmount,
  currency,
  customer,
  externalId,
  freeForm,
  httpUrl,
  assertCallbackAllowed,
  majorAmount,
  metadata,
} from '../inputs';
import { timestamp } from '../schemas';

export interface PaymentSettings {
  taskQueue: string;
  paymentWaitMs: number;
  paymentExpirySeconds: number;
  callbackRetryInitialSeconds: number;
}

export const createPaymentBody = z
  .object({
    amount: majorAmount,
    currency,
    externalId,
    customer,
    billing: freeForm.optional(),
    callbackUrl: httpUrl.optional(),
    cardToken: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .describe('saved-card token flow; a bad token gives 400 invalid_card_token'),
    description: z.string().max(1000).optional(),
    metadata: metadata.optional(),
    returnUrl: httpUrl.optional(),
    saveCardEnabled: z.boolean().optional(),
  })
  .strict()
  .transform((body, ctx) => {
    const amountMinor = checkAmount(body, ctx);
    return amountMinor === undefined ? z.NEVER : { ...body, amountMinor };
  });

export type CreatePaymentBody = z.output<typeof createPaymentBody>;

export const paymentSchema = z
  .object({
    id: z.string(),
    externalId: z.string(),
    amount: z.number(),
    amountRefunded: z.number(),
    amountRefundable: z.number(),
    currency: z.string(),
    status: z.enum(['created', 'succeeded', 'failed', 'refunded', 'voided', 'partially_refunded']),
    processor: z.string(),
    providerTransactionId: z.string().nullable(),
    redirectUrl: z.string().nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
    expiresAt: timestamp,
    environment: z.enum(['test', 'live']),
    customer: z.object({ email: z.string(), name: z.string().optional(), externalId: z.string().optional() }),
    description: z.string().nullable(),
    metadata: z.record(z.string(), z.string()).nullable(),
    billing: z.record(z.string(), z.unknown()).nullable(),
    callbackUrl: z.string().nullable(),
    returnUrl: z.string().nullable(),
    saveCardEnabled: z.boolean(),
    failureCode: z.string().nullable(),
    failureMessage: z.string().nullable(),
  })
  .meta({ id: 'Payment' });

const paymentIdParams = z.object({ paymentId: z.string() });

function conflict(
  existing: Pick<Payment, 'amountMinor' | 'currency' | 'id'>,
  body: CreatePaymentBody,
): AppError | undefined {
  if (existing.amountMinor === body.amountMinor && existing.currency === body.currency) return undefined;
  return new AppError(
    'external_id_conflict',
    'A payment with this externalId exists with another amount or currency.',
    {
      paymentId: existing.id,
    },
  );
}

/**
 * externalIds stay unique per merchant across environments (one unique key): the other
 * environment's record is refused without being named or described.
 */
const otherEnvironmentConflict = () =>
  new AppError('external_id_conflict', 'This externalId is used by a record of the other environment.');

/** A payment as the create path holds it: as written or as found, with its merchant for the workflow's start. */
type CreatedPayment = PaymentView & { merchant: { id: string } };

/** Inserts the payment, or finds the one this externalId already names (exactly one under concurrency). */
async function insertOrFind(
  em: EntityManager,
  caller: Caller,
  body: CreatePaymentBody,
  expirySeconds: number,
  processor: string,
): Promise<CreatedPayment> {
  const now = new Date();
  const merchant = { id: caller.merchantId };
  const inserted = await insertPayment(em, {
    id: newId('payment'),
    merchantId: caller.merchantId,
    externalId: body.externalId,
    environment: caller.environment,
    processor,
    amountMinor: body.amountMinor,
    currency: body.currency,
    cardToken: body.cardToken ?? null,
    saveCardEnabled: body.saveCardEnabled ?? false,
    customer: body.customer,
    billing: body.billing ?? null,
    metadata: body.metadata ?? null,
    description: body.description ?? null,
    callbackUrl: body.callbackUrl ?? null,
    returnUrl: body.returnUrl ?? null,
    expiresAt: new Date(now.getTime() + expirySeconds * 1000),
    createdAt: now,
  });
  if (inserted) return { ...inserted, merchant };
  // The externalId names a payment already: that one (the unique key spans both environments).
  // A fork of its own: the ORM's identity map is per request (the insert above needs none).
  const existing = await em.fork().findOne(Payment, { merchant: caller.merchantId, externalId: body.externalId });
  if (!existing) throw new AppError('concurrent_request', 'A request with this externalId is being processed; retry.');
  if (existing.environment !== caller.environment) throw otherEnvironmentConflict();
  return existing;
}

/** How long to wait before sending again a submit refused by a run handing over to a new one. */
const HANDOVER_RETRY_MS = 100;

/** The payment workflow's validator refused the submit: its run is continuing as new. */
function isHandingOver(err: unknown): boolean {
  return (
    err instanceof WorkflowUpdateFailedError &&
    err.cause instanceof ApplicationFailure &&
    err.cause.type === PAYMENT_UPDATE_REFUSED.handingOver
  );
}

const serviceUnavailableNoRecord = () =>
  workflowServiceUnavailable(
    'The workflow service is temporarily unavailable; nothing was decided. Retry with the same externalId.',
    {},
  );

export function paymentRoutes(deps: {
  em: EntityManager;
  client: Client;
  providers: ProviderRegistry;
  settings: PaymentSettings;
  outcomes?: OutcomeHintListener;
}) {
  const { client, providers, settings, outcomes } = deps;

  /**
   * The Update's outcome: with a listener, whichever comes first of the Update's answer and the
   * worker's hint that the attempt's outcome is committed (src/api/temporalOutcome.ts). A run the
   * API starts makes its attempt in its first workflow task (START_ATTEMPT_LOCAL), so the Update
   * usually completes there and its answer comes in the one call.
   */
  function updateOutcome(op: WithStartWorkflowOperation<typeof paymentWorkflowV2>, paymentId: string) {
    const ask = () => client.workflow.executeUpdateWithStart(submitPaymentUpdate, { startWorkflowOperation: op });
    return outcomes ? firstOfAnswerAndHint(ask, outcomes.waitFor(paymentId)) : ask();
  }

  /**
   * Update-with-Start: start `payment-<id>` if needed and wait (bounded) for the outcome.
   * `no_answer`: Temporal is there but no outcome came in time (a busy or absent worker; it
   * will follow). `unreachable`: the call ended without an outcome and Temporal does not answer.
   * A run handing over to a new one (continue-as-new) refuses the Update: it is sent again.
   */
  async function submit(
    payment: CreatedPayment,
  ): Promise<SubmitOutcome | PaymentOutcomeHint | 'no_answer' | 'unreachable' | 'closed'> {
    const deadline = Date.now() + settings.paymentWaitMs;
    for (;;) {
      const op = new WithStartWorkflowOperation(
        paymentWorkflowV2,
        paymentWorkflowStartOptions(payment, settings, { attemptOnStart: true }),
      );
      try {
        return await client.withDeadline(deadline, () => updateOutcome(op, payment.id));
      } catch (err) {
        if (isHandingOver(err) && Date.now() + HANDOVER_RETRY_MS < deadline) {
          await new Promise((resolve) => setTimeout(resolve, HANDOVER_RETRY_MS));
          continue;
        }
        if (isHandingOver(err)) return 'no_answer';
        // Closed, or settled (the Update's validator rejects it): PostgreSQL has the outcome.
        if (err instanceof WorkflowExecutionAlreadyStartedError || err instanceof WorkflowUpdateFailedError)
          return 'closed';
        // An Update aborted with its workflow task (a worker died mid-task) has no outcome either.
        if (isDeadlineExceeded(err) || isUpdateAborted(err)) {
          return (await temporalReachable(client)) ? 'no_answer' : 'unreachable';
        }
        if (isTemporalUnreachable(err)) return 'unreachable';
        throw err;
      }
    }
  }

  return [
    defineRoute({
      method: 'post',
      path: '/payments',
      operationId: 'createPayment',
      tag: 'Payments',
      summary: 'Create a payment (hosted page, or saved-card token) or return the one this externalId names.',
      description:
        'With `cardToken` the answer carries the outcome (`succeeded` or `failed`); without, the payment is `created` with a `redirectUrl` for the customer. The same externalId with the same amount and currency returns the existing payment.',
      body: createPaymentBody,
      response: paymentSchema,
      errors: {
        400: ['validation_error', 'invalid_card_token', 'external_id_conflict'],
        ...AUTH_ERRORS,
        500: ['provider_not_configured'],
        502: ['provider_invalid_response'],
        503: ['provider_unavailable'],
      },
      handler: async ({ body, caller }) => {
        assertCallbackAllowed(body.callbackUrl, caller.environment);
        const processor = await processorForCreate(providers, caller, async () => {
          const existing = await deps.em
            .fork()
            .findOne(
              Payment,
              { merchant: caller.merchantId, externalId: body.externalId, environment: caller.environment },
              { fields: ['processor'] },
            );
          return existing?.processor ?? null;
        });
        for (let round = 0; round < 3; round++) {
          const payment = await insertOrFind(deps.em, caller, body, settings.paymentExpirySeconds, processor);
          const mismatch = conflict(payment, body);
          if (mismatch) throw mismatch;
          if (payment.status !== 'created') return presentPayment(payment);

          const outcome = await submit(payment);
          // The hint of the statement that applied the attempt carries the payment as it committed.
          if (typeof outcome === 'object' && 'payment' in outcome && outcome.payment) return outcome.payment;
          const current = await findPaymentView(deps.em, payment.id, caller);
          if (!current) {
            if (outcome === 'unreachable') throw serviceUnavailableNoRecord();
            if (typeof outcome === 'object' && outcome.kind === 'rejected') throw providerRejection(outcome);
            continue; // discarded by a concurrent request's rejection: create afresh
          }
          const data = presentPayment(current);
          if (outcome === 'closed' || current.status !== 'created') return data;
          if (outcome === 'unreachable') {
            // Its workflow may or may not have started. If it did, it makes this request's attempt
            // (attemptOnStart); if not, the sweeper gives it one that attempts nothing without a
            // repeat of this request. A repeat answers with the outcome either way.
            throw workflowServiceUnavailable(
              'The workflow service is temporarily unavailable; the payment is not settled yet. Retry with the same externalId.',
              { payment: data },
            );
          }
          if (outcome === 'no_answer') {
            throw new AppError(
              'provider_unavailable',
              'The payment provider did not answer in time; the outcome will follow. Retry with the same externalId.',
              { payment: data },
            );
          }
          switch (outcome.kind) {
            case 'provider_unavailable':
              throw providerTrouble(
                outcome.kind,
                'The payment provider is temporarily unreachable; nothing was charged. Retry with the same externalId.',
                { payment: data },
              );
            case 'provider_timeout':
              throw providerTrouble(
                outcome.kind,
                'The payment provider did not answer in time; the outcome will follow.',
                { payment: data },
              );
            case 'provider_invalid':
              throw providerTrouble(
                outcome.kind,
                'The payment provider returned an invalid response; the outcome will follow.',
                { payment: data },
              );
            default:
              return data;
          }
        }
        throw new AppError('concurrent_request', 'Concurrent requests with this externalId; retry.');
      },
    }),
    defineRoute({
      method: 'get',
      path: '/payments/{paymentId}',
      operationId: 'getPayment',
      tag: 'Payments',
      summary: 'Retrieve a payment.',
      params: paymentIdParams,
      response: paymentSchema,
      errors: { ...AUTH_ERRORS, 404: ['not_found'] },
      handler: async ({ params, caller }) => {
        if (!isId('payment', params.paymentId)) throw new AppError('not_found', 'Payment not found.');
        const payment = await findPaymentView(deps.em, params.paymentId, caller);
        if (!payment) throw new AppError('not_found', 'Payment not found.');
        return presentPayment(payment);
      },
    }),
  ];
}
