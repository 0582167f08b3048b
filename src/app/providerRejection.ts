import { AppError } from '../errors';
import { PROVIDER_ERROR_CODE, rejectionErrorCode } from '../rules/providerFailures';

/** The message of each named refusal; any other refusal carries the provider's own message. */
const MESSAGES: Partial<Record<string, string>> = {
  [PROVIDER_ERROR_CODE.invalidCardToken]: 'The card token is not valid.',
  [PROVIDER_ERROR_CODE.notConfigured]: 'The payment provider is not configured correctly.',
};

/**
 * The answer to a request the provider refused before doing anything (the record was discarded,
 * so its externalId is free again): a bad card token, another refusal, or our own credentials
 * refused by the provider (an operator's matter: 500 `provider_not_configured`, as when none is
 * configured). The code comes from src/rules/providerFailures.ts, its status from src/errors.ts.
 */
export function providerRejection(outcome: { code: string; message: string }): AppError {
  const code = rejectionErrorCode(outcome.code);
  return new AppError(code, MESSAGES[code] ?? outcome.message);
}
