import { z } from 'zod';
import { DISPUTE_STATUSES } from '../../db/entities';
import { isId } from '../../ids';
import { disputeNotFound, findDispute, presentDispute } from '../../domain/disputes';
import { acceptDispute, submitDisputeEvidence, type DisputeUseCases } from '../../app/disputes';
import { AUTH_ERRORS, defineRoute } from '../routing';
import { timestamp } from '../schemas';

/** The longest evidence text kept (characters). */
export const MAX_EVIDENCE_CHARS = 20_000;

export const disputeSchema = z
  .object({
    id: z.string(),
    paymentId: z.string(),
    providerDisputeId: z.string(),
    amount: z.number(),
    currency: z.string(),
    reason: z.string(),
    status: z.enum(DISPUTE_STATUSES),
    evidenceDueBy: timestamp,
    evidence: z
      .object({ text: z.string(), submittedAt: timestamp.nullable().describe('null until sent to the processor') })
      .nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
    closedAt: timestamp.nullable(),
  })
  .meta({ id: 'Dispute' });

export const disputeEvidenceBody = z
  .object({
    text: z
      .string()
      .min(1)
      .max(MAX_EVIDENCE_CHARS)
      .describe(`the merchant's evidence, 1..${MAX_EVIDENCE_CHARS} characters`),
    submit: z
      .boolean()
      .describe('true: send it to the processor (the dispute goes `under_review`); false: keep it as a draft'),
  })
  .strict();

const disputeParams = z.object({ disputeId: z.string() });

const PROVIDER_ERRORS = [
  'provider_rejected',
  'provider_not_configured',
  'provider_invalid_response',
  'provider_unavailable',
] as const;

export function disputeRoutes(deps: DisputeUseCases) {
  return [
    defineRoute({
      method: 'get',
      path: '/disputes/{disputeId}',
      operationId: 'getDispute',
      tag: 'Disputes',
      summary: 'Retrieve a dispute (chargeback) the processor opened on a payment.',
      params: disputeParams,
      response: disputeSchema,
      errors: [...AUTH_ERRORS, 'not_found'],
      handler: async ({ params, caller }) => {
        if (!isId('dispute', params.disputeId)) throw disputeNotFound();
        const dispute = await findDispute(deps.em, caller, params.disputeId);
        if (!dispute) throw disputeNotFound();
        return presentDispute(dispute);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/disputes/{disputeId}/evidence',
      operationId: 'submitDisputeEvidence',
      tag: 'Disputes',
      summary: "Keep the merchant's evidence, or send it to the processor (`submit: true`: `under_review`).",
      description:
        'Only while the dispute is `needs_response`, else 409 `dispute_not_updatable`. The processor decides the dispute later (`dispute.closed`).',
      params: disputeParams,
      body: disputeEvidenceBody,
      response: disputeSchema,
      errors: ['validation_error', ...AUTH_ERRORS, 'not_found', 'dispute_not_updatable', ...PROVIDER_ERRORS],
      handler: async ({ params, body, caller }) => {
        if (!isId('dispute', params.disputeId)) throw disputeNotFound();
        return submitDisputeEvidence(deps, caller, params.disputeId, body);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/disputes/{disputeId}/accept',
      operationId: 'acceptDispute',
      tag: 'Disputes',
      summary: 'Accept the dispute: `accepted`, which counts as lost.',
      description: 'Only while the dispute is `needs_response`, else 409 `dispute_not_updatable`.',
      params: disputeParams,
      response: disputeSchema,
      errors: [...AUTH_ERRORS, 'not_found', 'dispute_not_updatable', ...PROVIDER_ERRORS],
      handler: async ({ params, caller }) => {
        if (!isId('dispute', params.disputeId)) throw disputeNotFound();
        return acceptDispute(deps, caller, params.disputeId);
      },
    }),
  ];
}
