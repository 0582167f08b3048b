import { ConfigError, loadSandboxConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { errorText } from '../../src/db/dbErrors';
import { createSandbox } from './server';

/** The provider sandbox process (docs/provider-sandbox.md): one process, state in memory. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadSandboxConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(78); // EX_CONFIG
  }
  const logger = createLogger(config.LOG_LEVEL, 'sandbox');
  const sandbox = createSandbox({
    apiKey: config.SANDBOX_API_KEY,
    webhookSecret: config.SANDBOX_WEBHOOK_SECRET,
    // Unset under `npm start` (tests and demos drive /_admin freely); required in production.
    adminToken: config.SANDBOX_ADMIN_TOKEN,
    // Checkout pages are addressed where customers (browsers) reach the sandbox.
    publicBaseUrl: config.sandboxUrl,
    processingSeconds: config.SANDBOX_PROCESSING_SECONDS,
    log: logger,
    disputeSeconds: config.SANDBOX_DISPUTE_SECONDS,
    disputeEvidenceSeconds: config.SANDBOX_DISPUTE_EVIDENCE_SECONDS,
    retention: {
      retentionSeconds: config.SANDBOX_RETENTION_SECONDS,
      maxLedgerEntries: config.SANDBOX_MAX_LEDGER_ENTRIES,
    },
  });
  const running = await sandbox.listen(config.SANDBOX_PORT, '0.0.0.0');
  logger.info({ port: config.SANDBOX_PORT }, 'sandbox listening');

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'sandbox shutting down');
    setTimeout(() => process.exit(0), 5_000).unref();
    void running.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`sandbox failed to start: ${errorText(err, (e) => e.stack ?? e.message)}\n`);
  process.exit(1);
});
