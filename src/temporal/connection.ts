import fs from 'node:fs';
import type { ConnectionOptions } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';
import type { Config } from '../config';

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
