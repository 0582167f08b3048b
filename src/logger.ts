import pino, { type Logger } from 'pino';
import { databaseErrorSummary } from './db/dbErrors';
import { currentLogContext } from './logContext';

export type { Logger };

/**
 * Structured JSON logs. Credentials never reach a log line: request logging records
 * method, path, status and timing only, and these paths are redacted as a second guard.
 */
export function createLogger(level: string, name: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    name,
    level,
    base: { pid: process.pid, process: name },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        'authorization',
        '*.authorization',
        'headers.authorization',
        '*.headers.authorization',
        'secretKey',
        '*.secretKey',
        'secret',
        '*.secret',
        'password',
        '*.password',
      ],
      censor: '[redacted]',
    },
    // `err` by convention; `error` is where the Temporal SDK puts a failed activity's error.
    serializers: { err: serializeError, error: serializeError },
    // The request id (and workflow) of the request or activity the line is written in. A new
    // object each line: pino merges the line's own fields into it.
    mixin: () => ({ ...currentLogContext() }),
  };
  return destination ? pino(options, destination) : pino(options);
}

/**
 * A database error (or one caused by it) is logged by class and code only (src/db/dbErrors.ts):
 * its message and fields carry the SQL and the values (card tokens, emails, secrets). Other
 * errors as pino logs them (type, message, stack).
 */
export function serializeError(err: unknown): unknown {
  const database = databaseErrorSummary(err);
  if (database) return database;
  return err instanceof Error ? pino.stdSerializers.err(err) : err;
}
