export const TEST_STACK_ENV = 'PAYMENTS_TEST_STACK';

export interface TestStack {
  dir: string;
  databaseUrl: string;
  temporalAddress: string;
  /** stripe-mock's base URL (what STRIPE_API_BASE takes), e.g. `http://127.0.0.1:41234`. */
  stripeApiBase: string;
  /** stripe-mock answering with settled fixtures (dev/infra/stripeMock.ts, settledFixtures). */
  settledStripeApiBase: string;
  workflowBundlePath: string;
}

export function testStack(): TestStack {
  const raw = process.env[TEST_STACK_ENV];
  if (!raw) throw new Error('The test stack is not running: run tests through jest (globalSetup).');
  return JSON.parse(raw) as TestStack;
}
