import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. Credentials never reach a log line: request logging records
 * method, path, status and timing only, and these paths are redacted as a second guard.
 */
export function createLogger(level: string, name: string): Logger {
  return pino({
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
  });
}
