import { z } from 'zod';
import { createLogger } from '../logger';
import { createSandbox } from '../sandbox/server';

/** The provider sandbox process (docs/provider-sandbox.md): one process, state in memory. */
const envSchema = z.object({
  SANDBOX_PORT: z.coerce.number().int().min(1).max(65535).default(3100),
  SANDBOX_API_KEY: z.string().min(1).default('sk_sandbox_dev'),
  SANDBOX_WEBHOOK_SECRET: z.string().min(1).default('whsec_sandbox_dev'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

async function main(): Promise<void> {
  const parsed = envSchema.safeParse(process.env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n  ');
    process.stderr.write(`sandbox: invalid environment:\n  ${problems}\n`);
    process.exit(1);
  }
  const env = parsed.data;
  const logger = createLogger(env.LOG_LEVEL, 'sandbox');
  const sandbox = createSandbox({
    apiKey: env.SANDBOX_API_KEY,
    webhookSecret: env.SANDBOX_WEBHOOK_SECRET,
    log: logger,
  });
  const running = await sandbox.listen(env.SANDBOX_PORT, '0.0.0.0');

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
  process.stderr.write(`sandbox failed to start: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
