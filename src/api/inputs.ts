import { z } from 'zod';
import { isCurrency, toMinor } from '../rules/money';
import { AppError } from '../errors';

/**
 * Request building blocks shared by every create endpoint: the limits of PRODUCT.md live here.
 */
export const externalId = z
  .string()
  .min(1)
  .max(255)
  .describe("the merchant's own identifier; the idempotency key of the create");

export const currency = z
  .string()
  .regex(/^[A-Za-z]{3}$/, 'Currency must be a 3-letter ISO 4217 code.')
  .refine(isCurrency, 'Unknown currency.')
  .transform((c) => c.toUpperCase())
  .describe('ISO 4217 alphabetic code, any case; answered upper case');

/** Amount in major units; checked against its currency's exponent by `withAmountInMinor`. */
export const majorAmount = z
  .number()
  .describe("major units (12.34 USD, 1200 JPY); at most the currency's decimals, > 0, <= 1,000,000,000");

export const httpUrl = z.url({ protocol: /^https?$/, error: 'Must be an http(s) URL.' }).max(2048);

export const metadata = z
  .record(z.string().min(1).max(40), z.string().max(500))
  .refine((m) => Object.keys(m).length <= 50, 'At most 50 metadata keys.')
  .describe('free-form: at most 50 keys of <= 40 characters, string values of <= 500');

export const freeForm = z
  .record(z.string(), z.unknown())
  .refine((v) => JSON.stringify(v).length <= 16_384, 'At most 16 KB.');

export const customer = z
  .object({
    email: z.email().max(320),
    name: z.string().min(1).max(255).optional(),
    externalId: z.string().min(1).max(255).optional(),
  })
  .strict();

/**
 * Adds `amountMinor` after checking `amount` against `currency` (decimals per exponent,
 * > 0, finite, bounded). Issues land on the `amount` path.
 */
export function checkAmount(
  value: { amount?: number; currency?: string },
  ctx: z.RefinementCtx,
  path = 'amount',
): number | undefined {
  if (value.amount === undefined || value.currency === undefined) return undefined;
  const result = toMinor(value.amount, value.currency);
  if (!result.ok) {
    ctx.addIssue({ code: 'custom', path: [path], message: result.message, params: { problem: result.problem } });
    return undefined;
  }
  return result.minor;
}

const PRIVATE_V4 = [/^127\./, /^10\./, /^192\.168\./, /^172\.(1[6-9]|2\d|3[01])\./, /^169\.254\./, /^0\./];

/** Loopback, private and link-local hosts: allowed as callback targets for test keys only. */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || host === '::1' || host === '::') return true;
  if (/^f[cd][0-9a-f]{2}:/.test(host) || host.startsWith('fe80:')) return true;
  return PRIVATE_V4.some((re) => re.test(host));
}

/** Live keys may not send callbacks to loopback or private addresses (SSRF); test keys may. */
export function assertCallbackAllowed(
  callbackUrl: string | undefined,
  environment: 'test' | 'live',
  path = 'callbackUrl',
): void {
  if (!callbackUrl || environment !== 'live' || !isPrivateHost(new URL(callbackUrl).hostname)) return;
  throw new AppError('validation_error', `${path} may not be a loopback or private address for live keys.`, {
    issues: [
      {
        path,
        code: 'private_address',
        message: 'Loopback and private addresses are for test keys only.',
      },
    ],
  });
}

/** An optional id naming one of the caller's records in a body (`customerId`, `paymentMethodId`). */
export const optionalRecordId = (description: string) => z.string().min(1).max(64).optional().describe(description);

/**
 * `customer` or `customerId`, exactly one (a subscription: at most one); `paymentMethodId` only with `customerId`, and not with
 * `cardToken` (PRODUCT.md, "Customers and payment methods").
 */
export function customerIssues(
  body: {
    customer?: unknown;
    customerId?: string;
    paymentMethodId?: string;
    cardToken?: string;
  },
  { customerRequired = true }: { customerRequired?: boolean } = {},
): Array<{ path: string[]; message: string }> {
  const issues: Array<{ path: string[]; message: string }> = [];
  if (body.customer !== undefined && body.customerId !== undefined) {
    issues.push({ path: ['customerId'], message: 'Send either customer or customerId, not both.' });
  }
  if (customerRequired && body.customer === undefined && body.customerId === undefined) {
    issues.push({ path: ['customer'], message: 'Required (or customerId).' });
  }
  if (body.paymentMethodId !== undefined && body.customerId === undefined) {
    issues.push({ path: ['paymentMethodId'], message: 'Only with customerId.' });
  }
  if (body.paymentMethodId !== undefined && body.cardToken !== undefined) {
    issues.push({ path: ['paymentMethodId'], message: 'Send either paymentMethodId or cardToken, not both.' });
  }
  return issues;
}
