/** A key's environment (src/db/entities.ts KEY_ENVIRONMENTS; rules import no entities). */
type KeyEnvironment = 'test' | 'live';

/**
 * Who a subscription email is addressed to (PRODUCT.md, Subscriptions and "Events, webhook
 * endpoints and deliveries"; decision 0066). The one place this is decided: every subscription
 * email the worker records asks here first.
 *
 * - Outside production, and for live records always: `customer.email`, else the merchant's email.
 * - In production, a test-environment record's email goes to the merchant's email, marked as a
 *   test-mode email on behalf of the customer's address; never to `customer.email` (test data
 *   names any address). No merchant email: `withheld` (recorded, never sent).
 * - Nobody to write to at all (no customer email, no merchant email): `none`.
 */
export type EmailRecipient =
  | { kind: 'usual'; to: string }
  | { kind: 'merchant_test'; to: string; onBehalfOf: string | null }
  | { kind: 'withheld'; onBehalfOf: string | null }
  | { kind: 'none' };

export function subscriptionEmailRecipient(input: {
  /** NODE_ENV=production (the worker's production profile). */
  production: boolean;
  environment: KeyEnvironment;
  customerEmail: string | null | undefined;
  merchantEmail: string | null | undefined;
}): EmailRecipient {
  const customer = nonEmpty(input.customerEmail);
  const merchant = nonEmpty(input.merchantEmail);
  if (!input.production || input.environment === 'live') {
    const to = customer ?? merchant;
    return to ? { kind: 'usual', to } : { kind: 'none' };
  }
  return merchant
    ? { kind: 'merchant_test', to: merchant, onBehalfOf: customer }
    : { kind: 'withheld', onBehalfOf: customer };
}

/** An email's subject and text as addressed to the merchant in its customer's place. */
export function asTestModeEmail(
  email: { subject: string; text: string },
  onBehalfOf: string | null,
): { subject: string; text: string } {
  const customer = onBehalfOf ?? 'no customer email';
  return {
    subject: `[Test mode] ${email.subject}`,
    text: [
      `Test mode: this email is about a test-environment subscription. It is sent to you, the merchant,`,
      `on behalf of the customer address ${customer}; test-environment emails never go to customers.`,
      '',
      email.text,
    ].join('\n'),
  };
}

const nonEmpty = (s: string | null | undefined): string | null => (s && s.trim() !== '' ? s : null);
