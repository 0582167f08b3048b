import { verifyCallbackSignature } from '../../clients/typescript/src';
import { verify } from '../../src/providers/signature';
import {
  createTestMerchant,
  startPaymentStack,
  testProviders,
  type PaymentStack,
  type TestMerchant,
} from '../helpers/stack';
import { call, eventually } from '../helpers/http';
import { startCallbackReceiver } from '../helpers/callbackReceiver';
import { runCli } from '../helpers/cli';
import { startDeliveryFixture } from '../helpers/merchantEventDelivery';
import { signingSecrets } from '../../src/domain/signingSecrets';

/**
 * Per-environment callback signing secrets, encrypted at rest (PRODUCT.md, "Events, webhook
 * endpoints and deliveries"; decision 0067): the `webhooks:secret` CLI, what signs a delivery,
 * rotation with an overlap, and secrets left in plain text by the migration.
 */
describe('signing secrets per environment', () => {
  let stack: PaymentStack;
  let merchant: TestMerchant;
  let seq = 0;

  const secretCli = (...args: string[]) => runCli(['webhooks:secret', '--merchant', merchant.merchantId, ...args]);
  const storedRow = async (merchantId: string, environment: string) => {
    const rows: Array<{ secret: string; previous_secret: string | null }> = await stack.orm.em
      .getConnection()
      .execute(
        'select secret, previous_secret from merchant_signing_secrets where merchant_id = ? and environment = ?',
        [merchantId, environment],
      );
    return rows[0];
  };
  /** A test-environment payment with a callback: the signature header of its payment.succeeded. */
  const deliveredSignature = async () => {
    const receiver = await startCallbackReceiver();
    try {
      const res = await call(stack.api.baseUrl, 'POST', '/payments', merchant.auth, {
        amount: 5,
        currency: 'GBP',
        externalId: `sig-${Date.now()}-${++seq}`,
        customer: { email: 'c@example.com' },
        cardToken: 'tok_success',
        callbackUrl: receiver.url,
      });
      expect(res.body).toMatchObject({ status: 'succeeded' });
      const [first] = await eventually(
        async () => receiver.received,
        (l) => l.length >= 1,
        15_000,
      );
      return { body: first!.body, signature: first!.signature };
    } finally {
      await receiver.close();
    }
  };

  beforeAll(async () => {
    stack = await startPaymentStack('signing-secrets', { callbackRetryInitialSeconds: 1 });
    merchant = await createTestMerchant(stack.orm, 'Signing merchant');
  });
  afterAll(() => stack.close());

  it('webhooks:secret keeps one secret per environment (default test), stored only encrypted', async () => {
    const test = await secretCli();
    expect(test.code).toBe(0);
    expect(test.json).toEqual({ secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/), environment: 'test' });
    expect((await secretCli('--environment', 'test')).json.secret).toBe(test.json.secret);
    const live = await secretCli('--environment', 'live');
    expect(live.json).toEqual({ secret: expect.stringMatching(/^whsec_/), environment: 'live' });
    expect(live.json.secret).not.toBe(test.json.secret);

    for (const [environment, secret] of [
      ['test', test.json.secret as string],
      ['live', live.json.secret as string],
    ] as const) {
      const row = await storedRow(merchant.merchantId, environment);
      expect(row!.secret).toMatch(/^v2:/);
      expect(row!.secret).not.toContain(secret);
      expect(row!.secret).not.toContain(secret.slice('whsec_'.length));
    }
  });

  it('refuses bad input with a usage error, and an unknown merchant with not_found', async () => {
    const bad = await secretCli('--environment', 'staging');
    expect(bad.code).toBe(2);
    expect(bad.json.error.message).toMatch(/--environment must be one of test, live/);
    expect((await secretCli('--rotate', '--overlap-hours', '169')).code).toBe(2);
    expect((await secretCli('--overlap-hours', '2')).code).toBe(2);
    const unknown = await runCli(['webhooks:secret', '--merchant', 'mer_nobody']);
    expect(unknown.code).toBe(1);
    expect(unknown.json.error.code).toBe('not_found');
  });

  it('signs a test-environment delivery with the test secret only: the live one (even rotated) does not verify it', async () => {
    const testSecret = (await secretCli()).json.secret as string;
    const rotatedLive = await secretCli('--environment', 'live', '--rotate');
    expect(rotatedLive.code).toBe(0);
    const liveSecret = rotatedLive.json.secret as string;
    expect(liveSecret).not.toBe(testSecret);

    const { body, signature } = await deliveredSignature();
    expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verify(testSecret, body, signature)).toBe(true);
    expect(verify(liveSecret, body, signature)).toBe(false);
  });

  it('during a rotation overlap a delivery carries both signatures, the new one first; without overlap only the new', async () => {
    const old = (await secretCli()).json.secret as string;
    const rotated = await secretCli('--rotate');
    expect(rotated.code).toBe(0);
    const fresh = rotated.json.secret as string;
    expect(fresh).not.toBe(old);
    expect((await secretCli()).json.secret).toBe(fresh);
    const row = await storedRow(merchant.merchantId, 'test');
    expect(row!.previous_secret).toMatch(/^v2:/);
    expect(row!.previous_secret).not.toContain(old.slice('whsec_'.length));

    const during = await deliveredSignature();
    const m = /^t=(\d+),v1=([0-9a-f]{64}),v1=([0-9a-f]{64})$/.exec(during.signature ?? '');
    expect(m).not.toBeNull();
    expect(verify(fresh, during.body, `t=${m![1]},v1=${m![2]}`)).toBe(true);
    expect(verify(old, during.body, `t=${m![1]},v1=${m![3]}`)).toBe(true);
    expect(verify(fresh, during.body, during.signature)).toBe(true);
    expect(verify(old, during.body, during.signature)).toBe(true);
    // The typed client's verifier checks every v1 too.
    expect(verifyCallbackSignature(during.body, during.signature, fresh)).toBe(true);
    expect(verifyCallbackSignature(during.body, during.signature, old)).toBe(true);
    expect(verifyCallbackSignature(during.body, during.signature, `${old}x`)).toBe(false);

    const now = (await secretCli('--rotate', '--overlap-hours', '0')).json.secret as string;
    const after = await deliveredSignature();
    expect(after.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verify(now, after.body, after.signature)).toBe(true);
    expect(verify(fresh, after.body, after.signature)).toBe(false);
  });

  it("a merchant's secret left in plain text by the migration serves both environments and is encrypted by db:migrate", async () => {
    const legacy = await createTestMerchant(stack.orm, 'Legacy signing merchant');
    const secret = 'whsec_legacy_secret_from_before_environments';
    // What Migration20261202010000SigningSecrets leaves for a merchant that had a secret.
    await stack.orm.em.getConnection().execute(
      `insert into merchant_signing_secrets (merchant_id, environment, secret, created_at, updated_at)
       values (?, 'test', ?, now(), now()), (?, 'live', ?, now(), now())`,
      [legacy.merchantId, `plain:${secret}`, legacy.merchantId, `plain:${secret}`],
    );
    const migrated = await runCli(['db:migrate']);
    expect(migrated.code).toBe(0);
    expect(migrated.json.signingSecretsEncrypted).toBeGreaterThanOrEqual(2);
    for (const environment of ['test', 'live']) {
      const row = await storedRow(legacy.merchantId, environment);
      expect(row!.secret).toMatch(/^v2:/);
      expect(row!.secret).not.toContain(secret);
      const shown = await runCli(['webhooks:secret', '--merchant', legacy.merchantId, '--environment', environment]);
      expect(shown.json.secret).toBe(secret);
    }
    // Rotating one environment leaves the other on the old secret.
    const rotated = await runCli([
      'webhooks:secret',
      '--merchant',
      legacy.merchantId,
      '--environment',
      'live',
      '--rotate',
    ]);
    expect(rotated.json.secret).not.toBe(secret);
    expect((await runCli(['webhooks:secret', '--merchant', legacy.merchantId])).json.secret).toBe(secret);
  });

  it('without PROVIDER_SECRETS_KEY an encrypted secret is refused, never shown', async () => {
    const res = await runCli(['webhooks:secret', '--merchant', merchant.merchantId], {
      PROVIDER_SECRETS_KEY: undefined,
    });
    expect(res.code).toBe(1);
    expect(res.json.error.code).toBe('signing_secret_unusable');
    expect(res.stdout).not.toMatch(/whsec_/);
  });
});

describe('a delivery whose signing secret does not open', () => {
  let fixture: Awaited<ReturnType<typeof startDeliveryFixture>>;
  beforeAll(async () => {
    fixture = await startDeliveryFixture('Unusable secret merchant');
  });
  afterAll(() => fixture.close());

  it('is not sent (never unsigned) and is retried; with the key it goes out signed with the test secret', async () => {
    const receiver = await startCallbackReceiver();
    try {
      const { orm, merchantId } = fixture;
      const secret = (await signingSecrets(orm.em.fork(), testProviders(orm).secrets, merchantId, 'test')).current;
      const eventId = await fixture.eventFor(receiver.url, 'test');
      const keyless = fixture.deliverer({ providers: testProviders(orm, undefined, 2000, { secretsKey: undefined }) });
      const failed = await keyless.deliverDueEvents();
      expect(receiver.received).toHaveLength(0);
      const job = await fixture.jobOf(eventId);
      expect(job).toMatchObject({ status: 'pending', attempts: 1, lastError: 'signing_secret_unusable' });
      expect(failed.nextDueAt).toBe(job.nextAttemptAt.toISOString());

      // Its retry, once due.
      await new Promise((resolve) => setTimeout(resolve, Date.parse(failed.nextDueAt!) - Date.now() + 50));
      expect(await fixture.deliverer().deliverDueEvents()).toMatchObject({ attempted: 1, nextDueAt: null });
      expect(receiver.received).toHaveLength(1);
      expect(await fixture.jobOf(eventId)).toMatchObject({ status: 'succeeded', attempts: 2, lastError: null });
      const [delivered] = receiver.received;
      expect(verify(secret, delivered!.body, delivered!.signature)).toBe(true);
    } finally {
      await receiver.close();
    }
  });
});
