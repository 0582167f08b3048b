import { workerMetrics, type ProviderOperation } from '../metrics/worker';
import { ProviderError } from './errors';
import type { PaymentProvider } from './types';

/**
 * A provider whose calls are timed and whose failures are counted by kind
 * (`provider_call_duration_seconds`, `provider_call_errors_total`; src/metrics/worker.ts).
 * Everything else is the provider's own. An error that is not a ProviderError (a bug, a
 * mismatch) counts as kind `error`.
 */
export function instrumentProvider(provider: PaymentProvider): PaymentProvider {
  const timed =
    <A extends unknown[], R>(operation: ProviderOperation, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const started = performance.now();
      try {
        const result = await call(...args);
        workerMetrics.providerCall(provider.name, operation, (performance.now() - started) / 1000, null);
        return result;
      } catch (err) {
        const kind = err instanceof ProviderError ? err.kind : 'error';
        workerMetrics.providerCall(provider.name, operation, (performance.now() - started) / 1000, kind);
        throw err;
      }
    };
  return {
    name: provider.name,
    createPayment: timed('createPayment', (input) => provider.createPayment(input)),
    findPayment: timed('findPayment', (by) => provider.findPayment(by)),
    cancelPayment: timed('cancelPayment', (transactionId) => provider.cancelPayment(transactionId)),
    createRefund: timed('createRefund', (input) => provider.createRefund(input)),
    findRefund: timed('findRefund', (by) => provider.findRefund(by)),
    findDispute: timed('findDispute', (id) => provider.findDispute(id)),
    submitDisputeEvidence: timed('submitDisputeEvidence', (id, text) => provider.submitDisputeEvidence(id, text)),
    acceptDispute: timed('acceptDispute', (id) => provider.acceptDispute(id)),
    attachPaymentMethod: timed('attachPaymentMethod', (input) => provider.attachPaymentMethod(input)),
    detachPaymentMethod: timed('detachPaymentMethod', (reference) => provider.detachPaymentMethod(reference)),
    parseWebhook: (rawBody, headers) => provider.parseWebhook(rawBody, headers),
  };
}
