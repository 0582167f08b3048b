import { DefaultLogger, type LogLevel } from '@temporalio/worker';
import type { Logger } from '../logger';

const PINO_LEVEL: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * The Temporal SDK's log lines (worker state, failed activities with their `error`) written
 * through our logger, so its serializers apply: a database error is logged by class and code.
 */
export function temporalSdkLogger(logger: Logger, level: LogLevel = 'INFO'): DefaultLogger {
  const sdkLogger = logger.child({ component: 'temporal-sdk' });
  return new DefaultLogger(level, (entry) => sdkLogger[PINO_LEVEL[entry.level]](entry.meta ?? {}, entry.message));
}
