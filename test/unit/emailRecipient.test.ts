import { asTestModeEmail, subscriptionEmailRecipient } from '../../src/rules/emailRecipient';

/** Decision 0066: where a subscription email goes, decided in one place. */
describe('subscriptionEmailRecipient', () => {
  const customerEmail = 'ada@example.com';
  const merchantEmail = 'merchant@example.com';

  it.each([
    [false, 'test'],
    [false, 'live'],
    [true, 'live'],
  ] as const)('production=%s, %s record: customer.email, else the merchant (unchanged)', (production, environment) => {
    expect(subscriptionEmailRecipient({ production, environment, customerEmail, merchantEmail })).toEqual({
      kind: 'usual',
      to: customerEmail,
    });
    expect(subscriptionEmailRecipient({ production, environment, customerEmail: null, merchantEmail })).toEqual({
      kind: 'usual',
      to: merchantEmail,
    });
    expect(subscriptionEmailRecipient({ production, environment, customerEmail: '', merchantEmail: null })).toEqual({
      kind: 'none',
    });
  });

  it('production, test record: the merchant, on behalf of the customer; never the customer', () => {
    expect(subscriptionEmailRecipient({ production: true, environment: 'test', customerEmail, merchantEmail })).toEqual(
      {
        kind: 'merchant_test',
        to: merchantEmail,
        onBehalfOf: customerEmail,
      },
    );
    expect(
      subscriptionEmailRecipient({ production: true, environment: 'test', customerEmail: undefined, merchantEmail }),
    ).toEqual({ kind: 'merchant_test', to: merchantEmail, onBehalfOf: null });
  });

  it('production, test record, no merchant email: withheld, never sent to the customer', () => {
    for (const merchant of [null, undefined, '', '  ']) {
      expect(
        subscriptionEmailRecipient({ production: true, environment: 'test', customerEmail, merchantEmail: merchant }),
      ).toEqual({ kind: 'withheld', onBehalfOf: customerEmail });
    }
  });

  it('a test-mode email says so, in its subject and first lines, naming the customer address', () => {
    const marked = asTestModeEmail({ subject: 'Payment receipt: 1.00 USD', text: 'Hello,\nbody' }, customerEmail);
    expect(marked.subject).toBe('[Test mode] Payment receipt: 1.00 USD');
    expect(marked.text.split('\n')[0]).toMatch(/^Test mode: /);
    expect(marked.text).toContain(`on behalf of the customer address ${customerEmail}`);
    expect(marked.text.endsWith('Hello,\nbody')).toBe(true);
    expect(asTestModeEmail({ subject: 's', text: 't' }, null).text).toContain('no customer email');
  });
});
