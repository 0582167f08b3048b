import type { EntityManager } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/core';
import { CustomerRecord, PaymentMethod, Subscription, TestClock } from '../db/entities';
import { AppError } from '../errors';
import { newId } from '../ids';
import type { CardDetails } from '../providers/types';
import type { RecordScope } from './scope';
import { clockForCreate } from './testClocks';

/**
 * Customers and their saved payment methods (PRODUCT.md, "Customers and payment methods";
 * decision 0087). Every lookup is scoped by merchant and environment: another merchant's or
 * environment's customer or payment method is not found.
 */

export const customerNotFound = () => new AppError('not_found', 'Customer not found.');
export const paymentMethodNotFound = () => new AppError('not_found', 'Payment method not found.');

export function presentCustomer(c: CustomerRecord) {
  return {
    id: c.id,
    externalId: c.externalId,
    email: c.email,
    name: c.name,
    metadata: c.metadata,
    defaultPaymentMethodId: c.defaultPaymentMethodId,
    testClock: c.testClockId,
    // On a test clock: the clock's time (PRODUCT.md "Test clocks"); the real time orders lists.
    createdAt: (c.clockCreatedAt ?? c.createdAt).toISOString(),
    updatedAt: c.updatedAt.toISOString(),
  };
}

export type CustomerResponse = ReturnType<typeof presentCustomer>;

export function presentPaymentMethod(pm: PaymentMethod) {
  return {
    id: pm.id,
    customerId: pm.customer.id,
    processor: pm.processor,
    card: {
      brand: pm.cardBrand,
      last4: pm.cardLast4,
      expMonth: pm.cardExpMonth,
      expYear: pm.cardExpYear,
    },
    createdAt: pm.createdAt.toISOString(),
  };
}

export type PaymentMethodResponse = ReturnType<typeof presentPaymentMethod>;

export interface CustomerFields {
  email?: string | null;
  name?: string | null;
  metadata?: Record<string, string> | null;
}

export interface CreateCustomerRequest extends CustomerFields {
  externalId: string;
  testClock?: string;
}

/** The fields a replay of a create must repeat exactly; the first that differs, else null. */
function differingField(existing: CustomerRecord, body: CreateCustomerRequest): string | null {
  if ((body.email ?? null) !== existing.email) return 'email';
  if ((body.name ?? null) !== existing.name) return 'name';
  if (!sameMetadata(body.metadata ?? null, existing.metadata)) return 'metadata';
  if ((body.testClock ?? null) !== existing.testClockId) return 'testClock';
  return null;
}

function sameMetadata(a: Record<string, string> | null, b: Record<string, string> | null): boolean {
  if (a === null || b === null) return a === b;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k]);
}

/**
 * POST /customers: inserts the customer, or answers the one its externalId names in the caller's
 * merchant and environment (exactly one under concurrency: the unique key decides); a replay with
 * other fields is `external_id_conflict`.
 */
export async function createOrFindCustomer(
  em: EntityManager,
  scope: RecordScope,
  body: CreateCustomerRequest,
): Promise<CustomerRecord> {
  const now = new Date();
  const id = newId('customer');
  // On a clock: one of the caller's, not advancing; the customer is dated at the clock's time.
  const clock = body.testClock ? await clockForCreate(em.fork(), scope, body.testClock) : null;
  const rows = await em.getConnection().execute<{ id: string }[]>(
    `insert into customers (id, merchant_id, environment, external_id, email, name, metadata, default_payment_method_id,
       provider_customers, test_clock_id, clock_created_at, created_at, updated_at)
     values (?, ?, ?, ?, ?, ?, ?::jsonb, null, '{}'::jsonb, ?, ?, ?, ?)
     on conflict (merchant_id, environment, external_id) do nothing
     returning id`,
    [
      id,
      scope.merchantId,
      scope.environment,
      body.externalId,
      body.email ?? null,
      body.name ?? null,
      body.metadata ? JSON.stringify(body.metadata) : null,
      clock?.id ?? null,
      clock?.frozenTime ?? null,
      now,
      clock?.frozenTime ?? now,
    ],
  );
  const fork = em.fork();
  if (rows.length > 0) return fork.findOneOrFail(CustomerRecord, { id });
  const existing = await fork.findOne(CustomerRecord, {
    merchant: scope.merchantId,
    environment: scope.environment,
    externalId: body.externalId,
  });
  if (!existing) throw new AppError('concurrent_request', 'A request with this externalId is being processed; retry.');
  const field = differingField(existing, body);
  if (field) {
    throw new AppError('external_id_conflict', `A customer with this externalId exists with another ${field}.`, {
      customerId: existing.id,
      field,
    });
  }
  return existing;
}

export async function findCustomer(em: EntityManager, scope: RecordScope, id: string): Promise<CustomerRecord | null> {
  return em.fork().findOne(CustomerRecord, { id, merchant: scope.merchantId, environment: scope.environment });
}

/** A payment method of this customer that is not deleted; null otherwise. */
export async function findPaymentMethod(
  em: EntityManager,
  customer: Pick<CustomerRecord, 'id'>,
  id: string,
): Promise<PaymentMethod | null> {
  return em.fork().findOne(PaymentMethod, { id, customer: customer.id, deletedAt: null });
}

export interface CustomerFilters {
  email?: string;
  externalId?: string;
}

export async function listCustomers(
  em: EntityManager,
  scope: RecordScope,
  filters: CustomerFilters,
  page: { limit: number; after?: { createdAt: Date; id: string } },
): Promise<{ items: CustomerResponse[]; next: { createdAt: Date; id: string } | null }> {
  const after = page.after;
  const rows = await em.fork().find(
    CustomerRecord,
    {
      merchant: scope.merchantId,
      environment: scope.environment,
      ...(filters.email !== undefined ? { email: filters.email } : {}),
      ...(filters.externalId !== undefined ? { externalId: filters.externalId } : {}),
      ...(after
        ? { $or: [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, id: { $lt: after.id } }] }
        : {}),
    },
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.limit + 1 },
  );
  const kept = rows.slice(0, page.limit);
  const last = kept[kept.length - 1];
  return {
    items: kept.map(presentCustomer),
    next: rows.length > page.limit && last ? { createdAt: last.createdAt, id: last.id } : null,
  };
}

/**
 * PATCH /customers/{id}: the fields sent replace the customer's (`null` clears one);
 * `defaultPaymentMethodId` must name one of its payment methods that is not deleted (else not found), or
 * be null (no default).
 */
export async function updateCustomer(
  em: EntityManager,
  scope: RecordScope,
  id: string,
  patch: CustomerFields & { defaultPaymentMethodId?: string | null },
): Promise<CustomerRecord> {
  return em.fork().transactional(async (tx) => {
    const customer = await tx.findOne(
      CustomerRecord,
      { id, merchant: scope.merchantId, environment: scope.environment },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (!customer) throw customerNotFound();
    if (patch.email !== undefined) customer.email = patch.email;
    if (patch.name !== undefined) customer.name = patch.name;
    if (patch.metadata !== undefined) customer.metadata = patch.metadata;
    if (patch.defaultPaymentMethodId !== undefined) {
      if (patch.defaultPaymentMethodId !== null) {
        const pm = await tx.findOne(PaymentMethod, {
          id: patch.defaultPaymentMethodId,
          customer: customer.id,
          deletedAt: null,
        });
        if (!pm) throw paymentMethodNotFound();
      }
      customer.defaultPaymentMethodId = patch.defaultPaymentMethodId;
    }
    customer.updatedAt = await customerNow(tx, customer);
    await tx.flush();
    return customer;
  });
}

/** The customer's payment methods that are not deleted, newest first. */
export async function listPaymentMethods(em: EntityManager, customer: Pick<CustomerRecord, 'id'>) {
  return em
    .fork()
    .find(PaymentMethod, { customer: customer.id, deletedAt: null }, { orderBy: { createdAt: 'desc', id: 'desc' } });
}

export interface NewPaymentMethod {
  id: string;
  processor: string;
  reference: string;
  providerCustomerId: string | null;
  /** What the processor told of the card; absent or null: nothing (each detail stays null). */
  card?: CardDetails | null;
  sourcePaymentId?: string;
}

/**
 * Keeps a card the processor verified (or saved from a payment) for the customer, and makes it the
 * default when the customer has none, in one transaction under the customer's lock. A payment's
 * card is kept once (its `sourcePaymentId` is unique), and a method id once: a second call answers
 * null, as does a customer that is gone.
 */
export async function addPaymentMethod(
  em: EntityManager,
  customerId: string,
  input: NewPaymentMethod,
): Promise<PaymentMethod | null> {
  return em.fork().transactional(async (tx) => {
    const customer = await tx.findOne(CustomerRecord, { id: customerId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!customer) return null;
    // Kept already (a setup page's webhook told twice).
    if (await tx.findOne(PaymentMethod, { id: input.id })) return null;
    if (input.sourcePaymentId) {
      const kept = await tx.findOne(PaymentMethod, { sourcePaymentId: input.sourcePaymentId });
      if (kept) return null;
    }
    const now = new Date();
    const { card } = input;
    const pm = tx.create(PaymentMethod, {
      id: input.id,
      merchant: customer.merchant,
      environment: customer.environment,
      customer,
      processor: input.processor,
      providerReference: input.reference,
      cardBrand: card?.brand?.slice(0, 32) ?? null,
      cardLast4: card?.last4 && /^\d{4}$/.test(card.last4) ? card.last4 : null,
      cardExpMonth: card?.expMonth ?? null,
      cardExpYear: card?.expYear ?? null,
      sourcePaymentId: input.sourcePaymentId ?? null,
      deletedAt: null,
      createdAt: now,
      updatedAt: now,
    });
    if (customer.defaultPaymentMethodId === null) customer.defaultPaymentMethodId = pm.id;
    if (input.providerCustomerId && customer.providerCustomers[input.processor] !== input.providerCustomerId) {
      customer.providerCustomers = { ...customer.providerCustomers, [input.processor]: input.providerCustomerId };
    }
    customer.updatedAt = await customerNow(tx, customer);
    await tx.flush();
    return pm;
  });
}

/**
 * DELETE /customers/{id}/payment-methods/{pmId}: the method is marked deleted (its row stays for
 * the payments that used it); deleting the default leaves the customer without one. Answers the
 * method as it was.
 */
export async function deletePaymentMethod(
  em: EntityManager,
  scope: RecordScope,
  customerId: string,
  pmId: string,
): Promise<PaymentMethod> {
  return em.fork().transactional(async (tx) => {
    const customer = await tx.findOne(
      CustomerRecord,
      { id: customerId, merchant: scope.merchantId, environment: scope.environment },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (!customer) throw customerNotFound();
    const pm = await tx.findOne(PaymentMethod, { id: pmId, customer: customer.id, deletedAt: null });
    if (!pm) throw paymentMethodNotFound();
    await refuseLastMethodInUse(tx, customer.id, pm);
    const now = new Date();
    pm.deletedAt = now;
    pm.updatedAt = now;
    if (customer.defaultPaymentMethodId === pm.id) {
      customer.defaultPaymentMethodId = null;
      customer.updatedAt = await customerNow(tx, customer);
    }
    await tx.flush();
    return pm;
  });
}

/**
 * When a change of the customer is dated: a customer on a test clock lives on the clock's time
 * (PRODUCT.md "Test clocks": its timestamps are clock time), else now. Its payment methods keep
 * real time, which orders them (newest first) as it orders lists.
 */
async function customerNow(tx: EntityManager, customer: Pick<CustomerRecord, 'testClockId'>): Promise<Date> {
  if (customer.testClockId === null) return new Date();
  const clock = await tx.findOne(TestClock, { id: customer.testClockId }, { fields: ['frozenTime'] });
  return clock?.frozenTime ?? new Date();
}

/** Subscription statuses whose later charges still need a card. */
const CHARGING_STATUSES = ['created', 'pending', 'active', 'past_due'] as const;

/**
 * A customer's last card a subscription can charge (not deleted, never hard-declined) is not
 * deleted while a subscription of the customer still charges: its next renewal would have no card
 * (issue 45; decision 0087). The customer's row is locked by the caller, so two deletes of its
 * last two cards cannot both pass. A card already hard-declined may always go.
 */
async function refuseLastMethodInUse(tx: EntityManager, customerId: string, pm: PaymentMethod): Promise<void> {
  if (pm.hardDeclinedAt !== null) return;
  const others = await tx.count(PaymentMethod, {
    customer: customerId,
    deletedAt: null,
    hardDeclinedAt: null,
    id: { $ne: pm.id },
  });
  if (others > 0) return;
  const using = await tx.find(
    Subscription,
    { customerId, status: { $in: [...CHARGING_STATUSES] } },
    { fields: ['id'], orderBy: { id: 'asc' }, limit: 10 },
  );
  if (using.length === 0) return;
  throw new AppError(
    'payment_method_in_use',
    "This is the customer's last card and a subscription still charges it; attach another card first, or cancel the subscription.",
    { paymentMethodId: pm.id, subscriptionIds: using.map((s) => s.id) },
  );
}

/**
 * The customer's other methods a subscription's hard-declined charge tries next, newest first
 * (PRODUCT.md "Customers and payment methods"; decision 0087): not deleted, never hard-declined,
 * kept by the subscription's processor (the one just declined is marked first). A method the round
 * charged before (a retried activity) is in the list again: its key replays its answer.
 */
export async function fallbackPaymentMethods(
  em: EntityManager,
  customerId: string,
  processor: string,
): Promise<Array<Pick<PaymentMethod, 'id' | 'providerReference'>>> {
  const methods = await em.fork().find(
    PaymentMethod,
    {
      customer: customerId,
      processor,
      deletedAt: null,
      hardDeclinedAt: null,
    },
    { orderBy: { createdAt: 'desc', id: 'desc' }, fields: ['id', 'providerReference'] },
  );
  return methods.map((m) => ({ id: m.id, providerReference: m.providerReference }));
}

/** The payment method kept from a payment's card (`saveCardEnabled`), if any. */
export async function savedPaymentMethodOf(em: EntityManager, paymentId: string): Promise<PaymentMethod | null> {
  return em.fork().findOne(PaymentMethod, { sourcePaymentId: paymentId });
}

/** A subscription's charge hard-declined this method: it is never charged by a subscription again. */
export async function markHardDeclined(em: EntityManager, paymentMethodId: string): Promise<void> {
  await em
    .fork()
    .nativeUpdate(PaymentMethod, { id: paymentMethodId, hardDeclinedAt: null }, { hardDeclinedAt: new Date() });
}

/**
 * A customer's card that captured an invoice its subscription was recovering (past_due, e.g. a new
 * card that ended the wait for one; decision 0088) becomes the default when the customer has none
 * a subscription can charge (none, deleted, or hard-declined), as the round's capture does.
 */
export async function makeDefaultWhenUnusable(
  em: EntityManager,
  customerId: string,
  paymentMethodId: string,
): Promise<void> {
  const rows: Array<{ usable: boolean }> = await em.execute(
    `select (pm.id is not null and pm.deleted_at is null and pm.hard_declined_at is null) as usable
       from customers c left join payment_methods pm on pm.id = c.default_payment_method_id
      where c.id = ?`,
    [customerId],
  );
  if (!rows[0] || rows[0].usable) return;
  await makeDefaultPaymentMethod(em, customerId, paymentMethodId);
}

/** The method that captured in a fallback round becomes the customer's default (when not deleted since). */
export async function makeDefaultPaymentMethod(
  em: EntityManager,
  customerId: string,
  paymentMethodId: string,
): Promise<void> {
  const fork = em.fork();
  const method = await fork.findOne(PaymentMethod, { id: paymentMethodId, customer: customerId, deletedAt: null });
  if (!method) return;
  const customer = await fork.findOne(CustomerRecord, { id: customerId }, { fields: ['testClockId'] });
  await fork.nativeUpdate(
    CustomerRecord,
    { id: customerId },
    { defaultPaymentMethodId: paymentMethodId, updatedAt: await customerNow(fork, customer ?? { testClockId: null }) },
  );
}

/**
 * The subscriptions of a customer a new card of it may end a wait for (decision 0088): past_due
 * ones (waiting for a new card, or retrying), and those whose invoice is being charged now (a
 * fallback round may be running: its wait then starts with the card signalled). Each decides in
 * its workflow what the card means; the others' next charge reads the customer's cards anyway.
 */
export async function subscriptionsToTellOfCard(
  em: EntityManager,
  customerId: string,
  processor: string,
): Promise<string[]> {
  const rows = await em.getConnection().execute<{ id: string }[]>(
    `select s.id from subscriptions s
      where s.customer_id = ? and s.processor = ?
        and (s.status = 'past_due'
             or (s.status in ('created', 'active')
                 and exists (select 1 from invoices i where i.subscription_id = s.id and i.status = 'open')))
      order by s.id limit 100`,
    [customerId, processor],
  );
  return rows.map((r) => r.id);
}
