import { AppError } from '../errors';

/**
 * The answer to a request the provider refused before doing anything (the record was discarded,
 * so its externalId is free again): a bad card token, another refusal, or our own credentials
 * refused by the provider (an operator's matter: 500 `provider_not_configured`, as when none is
 * configured).
 */
export function providerRejection(outcome: { code: string; message: string }): AppError {
  switch (outcome.code) {
    case 'invalid_card_token':
      return new AppError(400, 'invalid_card_token', 'The card token is not valid.');
    case 'provider_not_configured':
      return new AppError(500, 'provider_not_configured', 'The payment provider is not configured correctly.');
    default:
      return new AppError(400, 'provider_rejected', outcome.message);
  }
}
