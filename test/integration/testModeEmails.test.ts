import { Email } from '../../src/db/entities';
import { WITHHELD_TEST_EMAIL } from '../../src/domain/emails';
import { createKey, createMerchant } from '../../src/domain/merchants';
import { setProvider } from '../../src/domain/merchantProviders';
import { eventually } from '../helpers/http';
import {
  basicAuth,
  createTestMerchant,
  startPaymentStack,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { subscriptionClient } from '../helpers/subscriptions';

/**
 * PRODUCT.md: "With NODE_ENV=production, subscription emails of test-environment records go to
 * the merchant's email, never to customer.email" (decision 0066). The worker here addresses
 * emails as production does; a test key's subscription is emailed to its merchant, a live key's
 * to its customer, on the real stack with a one-second billing day (activation, first charge and
 * renewals: the general path and the renewal statement).
 */
describe('subscription emails in production: test-environment records go to the merchant', () => {
  const CUSTOMER = 'customer@example.com';
  const MERCHANT = 'merchant@example.com';
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let live: TestMerchant;

  beforeAll(async () => {
    stack = await startPaymentStack('testmodeemails', { billingDaySeconds: 1 }, undefined, undefined, {
      productionProfile: true,
    });
    merchant = await createTestMerchant(stack.orm, 'Test mode emails merchant');
    const key = await createKey(stack.orm.em.fork(), merchant.merchantId, { environment: 'live', role: 'merchant' });
    live = { ...merchant, auth: basicAuth(key.apiKey.publicKey, key.secretKey) };
    await setProvider(
      stack.orm.em.fork(),
      { merchantId: merchant.merchantId, environment: 'live', processor: 'sandbox' },
      null,
    );
  });
  afterAll(() => stack.close());

  /** A subscription under `who`'s key, its first two invoices paid, then cancelled: its caught emails. */
  async function emailedSubscription(who: TestMerchant) {
    const subs = subscriptionClient(stack, who);
    const created = await subs.create({ amount: 7, currency: 'usd', cardToken: 'tok_success' });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    await subs.untilPaid(id, 3);
    expect((await subs.cancel(id)).status).toBe(200);
    // Activated, three receipts at least, cancelled: all sent.
    const mail = await eventually(
      async () => subs.mail(id),
      (list) =>
        list.filter((e) => /Payment receipt/.test(e.subject)).length >= 3 &&
        list.some((e) => /cancel/i.test(e.subject)),
      20_000,
    );
    const rows = await stack.orm.em.fork().find(Email, { dedupeKey: { $like: `${id}:%` } });
    return { id, mail, rows };
  }

  it("a test key's subscription: every email to the merchant, marked test mode; none to customer.email", async () => {
    const { mail, rows } = await emailedSubscription(merchant);
    expect(mail.length).toBeGreaterThanOrEqual(5);
    for (const email of mail) {
      expect(email.to).toBe(MERCHANT);
      expect(email.subject).toMatch(/^\[Test mode\] /);
      expect(email.text).toContain(`on behalf of the customer address ${CUSTOMER}`);
    }
    expect(mail.map((e) => e.subject)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^\[Test mode\] Your subscription is active/)]),
    );
    // What is recorded says the same: not one row addressed to the customer.
    expect(rows.length).toBeGreaterThanOrEqual(mail.length);
    expect(rows.every((r) => r.to === MERCHANT)).toBe(true);
    expect(stack.mail().some((e) => e.to === CUSTOMER && e.subject.startsWith('[Test mode]'))).toBe(false);
  });

  it("a live key's subscription: emails to customer.email, as always", async () => {
    const { mail, rows } = await emailedSubscription(live);
    expect(mail.length).toBeGreaterThanOrEqual(5);
    for (const email of mail) {
      expect(email.to).toBe(CUSTOMER);
      expect(email.subject).not.toMatch(/Test mode/);
    }
    expect(rows.every((r) => r.to === CUSTOMER)).toBe(true);
  });

  it("a merchant without an email: a test key's subscription emails nobody, and says so in the outbox", async () => {
    const em = stack.orm.em.fork();
    const { apiKey, secretKey } = await createMerchant(em, { name: 'No email merchant', email: null });
    const silent = { auth: basicAuth(apiKey.publicKey, secretKey) } as TestMerchant;
    const subs = subscriptionClient(stack, silent);
    const created = await subs.create({ amount: 3, currency: 'usd', cardToken: 'tok_success' });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    await subs.untilPaid(id, 2);
    const rows = await eventually(
      () => stack.orm.em.fork().find(Email, { dedupeKey: { $like: `${id}:%` } }),
      (list) => list.length >= 3,
    );
    for (const row of rows) {
      expect(row).toMatchObject({ to: '', lastError: WITHHELD_TEST_EMAIL });
      expect(row.sentAt).not.toBeNull();
    }
    expect(subs.mail(id)).toEqual([]);
  });
});
