import fs from 'node:fs';
import type { ConnectionOptions } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';
import type { Config } from '../config';
import { cancellableRetryInterceptor } from './grpcRetry';

/** Address, TLS and API key for both the client (API) and the worker, from one config. */
export function temporalConnectionOptions(config: Config): ConnectionOptions & NativeConnectionOptions {
  const clientCert =
    config.TEMPORAL_TLS_CERT_PATH && config.TEMPORAL_TLS_KEY_PATH
      ? { crt: fs.readFileSync(config.TEMPORAL_TLS_CERT_PATH), key: fs.readFileSync(config.TEMPORAL_TLS_KEY_PATH) }
      : undefined;
  const tls = clientCert
    ? { clientCertPair: clientCert }
    : config.TEMPORAL_TLS || config.TEMPORAL_API_KEY
      ? true
      : undefined;
  return {
    address: config.temporalAddress,
    ...(tls ? { tls } : {}),
    ...(config.TEMPORAL_API_KEY ? { apiKey: config.TEMPORAL_API_KEY } : {}),
  };
}

/**
 * The client's connection (API, the worker's own client): the worker's options plus retries that
 * stop when a call is cancelled or its connection closed (src/temporal/grpcRetry.ts).
 */
export function temporalClientOptions(config: Config): ConnectionOptions {
  return { ...temporalConnectionOptions(config), interceptors: clientInterceptors() };
}

/** The gRPC interceptors of every client connection, in one place (tests' too). */
export const clientInterceptors = () => [cancellableRetryInterceptor()];
