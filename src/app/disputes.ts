import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../errors';
import {
  applyProviderDispute,
  assertUpdatable,
  disputeNotFound,
  findDispute,
  presentDispute,
  saveEvidenceDraft,
  type DisputeResponse,
} from '../domain/disputes';
import type { RecordScope } from '../domain/scope';
import { ProviderError, ProviderMismatchError, ProviderUnsupportedError } from '../providers/errors';
import { ProviderConfigurationError, type ProviderRegistry } from '../providers/registry';
import type { PaymentProvider, ProviderDispute } from '../providers/types';
import type { DisputeGateway } from '../temporal/disputeGateway';
import type { Logger } from '../logger';

/**
 * The dispute use cases the API's routes call: the domain (PostgreSQL), the processor (evidence,
 * acceptance) and the dispute's workflow (told of the change), and what their outcome is answered as.
 */
export interface DisputeUseCases {
  em: EntityManager;
  providers: ProviderRegistry;
  disputes: Pick<DisputeGateway, 'providerEvent'>;
  logger?: Logger;
}

/**
 * POST /disputes/{id}/evidence: kept (`submit: false`), or sent to the processor (`submit: true`,
 * the dispute goes `under_review`); only while `needs_response`.
 */
export async function submitDisputeEvidence(
  deps: DisputeUseCases,
  caller: RecordScope,
  disputeId: string,
  body: { text: string; submit: boolean },
): Promise<DisputeResponse> {
  if (!body.submit) return presentDispute(await saveEvidenceDraft(deps.em, caller, disputeId, body.text));
  return moveAtProcessor(
    deps,
    caller,
    disputeId,
    (provider, id) => provider.submitDisputeEvidence(id, body.text),
    body.text,
  );
}

/** POST /disputes/{id}/accept: the merchant concedes (`accepted`, counts as lost); only while `needs_response`. */
export async function acceptDispute(
  deps: DisputeUseCases,
  caller: RecordScope,
  disputeId: string,
): Promise<DisputeResponse> {
  return moveAtProcessor(deps, caller, disputeId, (provider, id) => provider.acceptDispute(id));
}

async function moveAtProcessor(
  deps: DisputeUseCases,
  caller: RecordScope,
  disputeId: string,
  move: (provider: PaymentProvider, providerDisputeId: string) => Promise<ProviderDispute>,
  evidence?: string,
): Promise<DisputeResponse> {
  const dispute = await findDispute(deps.em, caller, disputeId);
  if (!dispute) throw disputeNotFound();
  assertUpdatable(dispute);
  const provider = await providerOf(deps.providers, dispute);
  let pd: ProviderDispute;
  try {
    pd = await move(provider, dispute.providerDisputeId);
  } catch (err) {
    throw await processorTrouble(deps, provider, dispute.id, dispute.providerDisputeId, err);
  }
  let applied: Awaited<ReturnType<typeof applyProviderDispute>>;
  try {
    applied = await applyProviderDispute(deps.em.fork(), dispute.id, pd, evidence);
  } catch (err) {
    if (!(err instanceof ProviderMismatchError)) throw err;
    deps.logger?.error({ err, disputeId: dispute.id }, 'the processor dispute does not match ours');
    throw new AppError(
      'provider_invalid_response',
      'The processor answered about another dispute; it is being looked at.',
      {
        disputeId: dispute.id,
      },
    );
  }
  await tellWorkflow(deps, dispute.id);
  return presentDispute(applied ?? dispute);
}

async function providerOf(
  providers: ProviderRegistry,
  dispute: { merchant: { id: string }; environment: 'test' | 'live'; processor: string },
): Promise<PaymentProvider> {
  try {
    const provider = await providers.forRecord({
      merchantId: dispute.merchant.id,
      environment: dispute.environment,
      processor: dispute.processor,
    });
    if (provider) return provider;
  } catch (err) {
    if (!(err instanceof ProviderConfigurationError)) throw err;
  }
  throw new AppError('provider_not_configured', 'The processor of this dispute is not configured.');
}

/**
 * A processor call that did not move the dispute: its refusal because the dispute moved on there
 * (the record is brought up to date, then 409), or the processor's trouble, answered as such.
 */
async function processorTrouble(
  deps: DisputeUseCases,
  provider: PaymentProvider,
  disputeId: string,
  providerDisputeId: string,
  err: unknown,
): Promise<AppError> {
  if (err instanceof ProviderUnsupportedError) {
    return new AppError('provider_rejected', `The processor ${err.processor} does not take dispute responses here.`);
  }
  if (!(err instanceof ProviderError)) throw err;
  if (err.kind === 'rejected') {
    // Any refusal may say the dispute moved on there (the sandbox's 409 `dispute_not_updatable`;
    // Stripe's invalid_request_error on a closed dispute, under no code of its own; another
    // processor's `dispute_closed`): its dispute says. Moved on: the record is brought up to date,
    // then 409 (decision 0063).
    const pd = await provider.findDispute(providerDisputeId).catch(() => null);
    if (err.code === 'dispute_not_updatable' || (pd !== null && pd.status !== 'needs_response')) {
      const applied = pd ? await applyProviderDispute(deps.em.fork(), disputeId, pd).catch(() => null) : null;
      if (applied) await tellWorkflow(deps, disputeId);
      return new AppError('dispute_not_updatable', 'The processor no longer takes a response to this dispute.', {
        status: applied?.status ?? null,
      });
    }
  }
  if (err.kind === 'rejected') return new AppError('provider_rejected', err.message);
  // The call may have moved the dispute (an answer nobody knows, no answer): the workflow asks.
  if (err.kind !== 'misconfigured') await tellWorkflow(deps, disputeId);
  if (err.kind === 'invalid_response') {
    return new AppError('provider_invalid_response', 'The processor answered something invalid; retry.', {
      disputeId,
    });
  }
  if (err.kind === 'misconfigured') {
    return new AppError('provider_not_configured', 'The processor refused our credentials.');
  }
  return new AppError('provider_unavailable', 'The processor is unreachable or did not answer in time; retry.', {
    disputeId,
  });
}

/** The workflow looks at the dispute at once; if it cannot be told now, it looks at the deadline anyway. */
async function tellWorkflow(deps: DisputeUseCases, disputeId: string): Promise<void> {
  try {
    await deps.disputes.providerEvent(disputeId);
  } catch (err) {
    deps.logger?.warn({ err, disputeId }, 'dispute workflow not told of the change');
  }
}
