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
 * The longest a client connection waits before it dials Temporal again after a failed dial
 * (grpc-js grows the wait x1.6 per failure, from `grpc.initial_reconnect_backoff_ms`, with 20 %
 * jitter). grpc-js's own cap is 120 s. With it, an API process dialled a frontend that had been
 * down for half a minute up to as long again after its return, and answered 503 meanwhile
 * (docs/reliability.md: frontend recovery 30.1 s; test/integration/temporalReconnect.test.ts).
 * A dial every 2 s while Temporal is down costs nothing.
 */
export const RECONNECT_BACKOFF_MAX_MS = 2_000;

/**
 * The client's connection (API, the worker's own client): the worker's options, retries that
 * stop when a call is cancelled or its connection closed (src/temporal/grpcRetry.ts), and a
 * reconnect backoff capped at RECONNECT_BACKOFF_MAX_MS.
 */
export function temporalClientOptions(config: Config): ConnectionOptions {
  return {
    ...temporalConnectionOptions(config),
    interceptors: clientInterceptors(),
    channelArgs: {
      'grpc.initial_reconnect_backoff_ms': 500,
      'grpc.max_reconnect_backoff_ms': RECONNECT_BACKOFF_MAX_MS,
    },
  };
}

/** The gRPC interceptors of every client connection, in one place (tests' too). */
export const clientInterceptors = () => [cancellableRetryInterceptor()];
