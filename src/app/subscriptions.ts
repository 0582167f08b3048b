import { quotasOf, type QuotaSettings } from '../rules/quotas';
import type { EntityManager } from '@mikro-orm/postgresql';
import { PROVIDER_OUTCOME } from '../rules/providerFailures';
import { AppError, errors } from '../errors';
import { isId } from '../ids';
import { customerNotFound, findCustomer, findPaymentMethod, paymentMethodNotFound } from '../domain/customers';
import { clockAdvanceOf } from '../domain/testClocks';
import type { ProviderRegistry } from '../providers/registry';
import { processorForCreate } from '../domain/providerFor';
import type { RecordScope } from '../domain/scope';
import {
  CARD_UPDATABLE_STATUSES,
  createOrFindSubscription,
  existingSubscriptionProcessor,
  findSubscriptionView,
  recordCancelIntent,
  subscriptionRecordOf,
  subscriptionStartInput,
  subscriptionStartOf,
  type SubscriptionRequest,
  type SubscriptionResponse,
} from '../domain/subscriptions';
import type { SubscriptionGateway } from '../temporal/subscriptionGateway';
import type { ReviveAnswer } from '../temporal/workflowAnswers';
import type { CancelRequest, StartOutcome } from '../../workflows/subscriptionApi';
import { providerRejection } from './providerRejection';
import { providerTrouble, workflowServiceUnavailable } from './workflowTrouble';

/**
 * The subscription use cases the API's routes call: the domain (PostgreSQL) and the
 * subscription's workflow (its gateway) together, and what their outcome is answered as.
 */
export interface SubscriptionUseCases {
  em: EntityManager;
  providers: ProviderRegistry;
  subscriptions: Pick<
    SubscriptionGateway,
    'startAndAwaitFirstOutcome' | 'cancel' | 'revive' | 'updatePaymentMethod' | 'reachable'
  >;
  /** Per-merchant quotas (decision 0079): here the test environment's live subscriptions. */
  quotas?: Partial<QuotaSettings>;
}

const notFound = () => new AppError('not_found', 'Subscription not found.');

const notUpdatable = (view: SubscriptionResponse) =>
  new AppError(
    'subscription_not_updatable',
    `Only an active or past_due subscription takes a new card; this one is ${view.status}.`,
    { status: view.status },
  );

/** What POST /subscriptions may name instead of `customer` (PRODUCT.md, "Customers and payment methods"). */
export type SubscriptionRequestWithCustomer = Omit<SubscriptionRequest, 'customerId' | 'paymentMethodId'> & {
  customerId?: string;
  paymentMethodId?: string;
};

/**
 * A create naming `customerId` (decision 0087): its `customer` repeats the customer's email, name
 * and externalId; the first charge is `paymentMethodId`'s card, or `cardToken`, or the customer's
 * default, or (none) the hosted authorization. Later charges read the customer's default at charge
 * time (src/domain/subscriptions.ts). Another merchant's or environment's customer, or a method
 * that is not the customer's: 404; a customer without an email: 400 (subscription emails go to it).
 */
export async function withSubscriptionCustomer(
  em: EntityManager,
  caller: RecordScope,
  body: SubscriptionRequestWithCustomer,
): Promise<SubscriptionRequest> {
  const { customerId, paymentMethodId, ...rest } = body;
  if (customerId === undefined) return rest;
  if (!isId('customer', customerId)) throw customerNotFound();
  const customer = await findCustomer(em, caller, customerId);
  if (!customer) throw customerNotFound();
  if (customer.email === null) {
    throw errors.validation('Invalid request body: customerId: the customer has no email.', {
      issues: [{ path: 'customerId', code: 'customer_without_email', message: 'the customer has no email' }],
    });
  }
  // A customer on a test clock lives on its time, and so do its subscriptions (PRODUCT.md "Test
  // clocks"): they take its clock, and naming another is refused. A customer in real time may
  // still have a subscription on a clock (decision 0090).
  if (customer.testClockId !== null && (rest.testClock ?? customer.testClockId) !== customer.testClockId) {
    throw errors.validation(
      `Invalid request body: testClock: the customer lives on test clock ${customer.testClockId}; its subscriptions take that clock.`,
      {
        issues: [
          {
            path: 'testClock',
            code: 'test_clock_mismatch',
            message: "not the customer's test clock",
          },
        ],
      },
    );
  }
  const onClock = customer.testClockId !== null ? { testClock: customer.testClockId } : {};
  const snapshot = {
    email: customer.email,
    ...(customer.name !== null ? { name: customer.name } : {}),
    externalId: customer.externalId,
  };
  const methodId =
    paymentMethodId ?? (body.cardToken === undefined ? (customer.defaultPaymentMethodId ?? undefined) : undefined);
  if (methodId === undefined) return { ...rest, ...onClock, customer: snapshot, customerId: customer.id };
  const method = isId('paymentMethod', methodId) ? await findPaymentMethod(em, customer, methodId) : null;
  if (!method) throw paymentMethodNotFound();
  return {
    ...rest,
    ...onClock,
    customer: snapshot,
    customerId: customer.id,
    paymentMethodId: method.id,
    cardToken: method.providerReference,
    paymentMethodProcessor: method.processor,
  };
}

/**
 * POST /subscriptions: creates the subscription (or finds the one its externalId names), starts
 * its workflow and waits, bounded, for its first outcome; answers the subscription, or the error
 * that says what is left.
 */
export async function createSubscription(
  deps: SubscriptionUseCases,
  caller: RecordScope,
  body: SubscriptionRequest,
): Promise<SubscriptionResponse> {
  const { em, providers, subscriptions } = deps;
  const processor = await processorForCreate(providers, caller, () =>
    existingSubscriptionProcessor(em, caller, body.externalId),
  );
  if (body.paymentMethodProcessor !== undefined && body.paymentMethodProcessor !== processor) {
    throw errors.validation(
      `Invalid request body: paymentMethodId: the payment method is kept by ${body.paymentMethodProcessor}; new subscriptions of this key go to ${processor}.`,
      {
        issues: [
          {
            path: 'paymentMethodId',
            code: 'processor_mismatch',
            message: 'The payment method is of another processor.',
          },
        ],
      },
    );
  }
  const { subscription, phases } = await createOrFindSubscription(em, caller, body, {
    processor,
    liveTestLimit: quotasOf(deps.quotas).liveTestSubscriptions,
  });
  const outcome: StartOutcome | 'no_answer' =
    subscription.status === 'created'
      ? await subscriptions.startAndAwaitFirstOutcome(await subscriptionStartInput(em, subscription, phases))
      : { kind: 'settled' };
  const view = await findSubscriptionView(em, subscription.id, caller);
  if (!view) {
    if (outcome !== 'no_answer' && outcome.kind === 'rejected') throw providerRejection(outcome);
    throw new AppError('concurrent_request', 'A request with this externalId is being processed; retry.');
  }
  if (view.status !== 'created') return view;
  if (outcome === 'no_answer' && !(await subscriptions.reachable())) {
    throw workflowServiceUnavailable(
      'The subscription is recorded; the workflow service did not answer, and its first step is taken as soon as it is reachable. Repeat the request to see the result.',
      { subscription: view },
    );
  }
  throw troubleOf(outcome, view);
}

/** A subscription still `created` after the wait: the first charge's outcome will follow. */
function troubleOf(outcome: StartOutcome | 'no_answer', view: SubscriptionResponse): AppError {
  if (outcome !== 'no_answer' && outcome.kind === PROVIDER_OUTCOME.invalid) {
    return providerTrouble(
      outcome.kind,
      'The payment provider returned an invalid response; the subscription exists and its first charge will be confirmed.',
      { subscription: view },
    );
  }
  return new AppError(
    'provider_unavailable',
    'The payment provider did not answer in time; the subscription exists and its first step is retried automatically. Retry with the same externalId to see it.',
    { subscription: view },
  );
}

/** DELETE /subscriptions/{id}: cancels through the workflow and answers the subscription in its resulting state. */
export async function cancelSubscription(
  deps: Pick<SubscriptionUseCases, 'em' | 'subscriptions'>,
  caller: RecordScope,
  subscriptionId: string,
  req: { reason?: string; notify: boolean },
): Promise<SubscriptionResponse> {
  const { em, subscriptions } = deps;
  const before = await findSubscriptionView(em, subscriptionId, caller);
  if (!before) throw notFound();
  if (before.status === 'cancelled') return before;
  const cancel = { reason: req.reason ?? 'merchant_request', notify: req.notify };
  // Recorded first (decision 0076): from here no invoice is opened and no charge sent, whatever
  // becomes of the workflow's Update; the cancellation itself is still the workflow's.
  const recorded = await recordCancelIntent(em, subscriptionId, cancel);
  let result = await subscriptions.cancel(subscriptionId, cancel);
  if (result === 'closed' && (await reviveToCancel(deps, subscriptionId, cancel)) !== 'skipped') {
    // Its run had ended with the subscription live (decision 0061): a new run took the cancel
    // as its first message (the same update id); this waits for it as for any other.
    result = await subscriptions.cancel(subscriptionId, cancel);
  }
  const after = await findSubscriptionView(em, subscriptionId, caller);
  if (!after) throw notFound();
  if (after.status === 'cancelled') return after;
  if (result === 'accepted' || (result === 'no_answer' && recorded)) {
    // No answer with the intent recorded (e.g. failing workflow tasks): the cancel is not lost,
    // nothing is charged meanwhile, and it takes effect when the workflow runs again.
    throw workflowServiceUnavailable(
      'The cancellation is accepted and takes effect as soon as the workers resume; repeat the request to see the result.',
      { subscription: after, cancellation: 'accepted' },
    );
  }
  if (result === 'no_answer') {
    throw workflowServiceUnavailable(
      'The workflow service did not answer in time; nothing was decided yet. Repeat the request to see the result.',
      { subscription: after },
    );
  }
  return after; // a closed workflow: the record says what became of the subscription
}

/**
 * A DELETE that found no run of a live subscription (it ended: failed, terminated, timed out):
 * the run is started again where the record says, with the cancel as its first message, so it is
 * never charged meanwhile (the sweeper would otherwise revive it and go on billing).
 */
async function reviveToCancel(
  deps: Pick<SubscriptionUseCases, 'em' | 'subscriptions'>,
  subscriptionId: string,
  cancel: CancelRequest,
): Promise<ReviveAnswer> {
  const em = deps.em.fork();
  const start = await subscriptionStartOf(em, subscriptionId);
  if (!start) return 'skipped';
  // On a test clock the record is in clock time: the run is taken up at the clock's time.
  const clock = start.testClock ? await clockAdvanceOf(em, start.testClock.id) : null;
  return deps.subscriptions.revive(start, () => subscriptionRecordOf(em, subscriptionId), cancel, clock?.frozenTimeMs);
}

/**
 * POST /subscriptions/{id}/payment-method (PRODUCT.md "Subscription card update"): an Update of
 * the subscription's workflow, which verifies and keeps the card (a past_due subscription is
 * charged at once with it) or opens a hosted page; nothing is started, and the answer is the
 * subscription from PostgreSQL.
 */
export async function updateSubscriptionPaymentMethod(
  deps: Pick<SubscriptionUseCases, 'em' | 'subscriptions'>,
  caller: RecordScope,
  subscriptionId: string,
  body: { cardToken?: string },
): Promise<SubscriptionResponse> {
  const { em, subscriptions } = deps;
  const before = await findSubscriptionView(em, subscriptionId, caller);
  if (!before) throw notFound();
  if (!CARD_UPDATABLE_STATUSES.includes(before.status)) throw notUpdatable(before);
  const req = body.cardToken ? { cardToken: body.cardToken } : {};
  const result = await subscriptions.updatePaymentMethod(subscriptionId, req, before.updatedAt);
  const after = await findSubscriptionView(em, subscriptionId, caller);
  if (!after) throw notFound();
  if (result === 'refused' || (typeof result === 'object' && result.kind === 'not_updatable')) {
    throw notUpdatable(after);
  }
  if (result === 'accepted') {
    throw workflowServiceUnavailable(
      'The card update is accepted and not finished yet (workers busy, or the provider slow for a past_due charge); it takes effect without another request. Repeat the request to see the result.',
      { subscription: after, paymentMethod: 'accepted' },
    );
  }
  if (result === 'no_answer') {
    throw workflowServiceUnavailable(
      'The workflow service did not answer in time; nothing was decided yet. Repeat the request to see the result.',
      { subscription: after },
    );
  }
  switch (result.kind) {
    case 'rejected':
      throw providerRejection(result);
    case PROVIDER_OUTCOME.unavailable:
      throw providerTrouble(
        result.kind,
        'The payment provider could not verify the card in time; nothing changed. Retry the request.',
        { subscription: after },
        { 'Retry-After': '1' },
      );
    default:
      return after;
  }
}
