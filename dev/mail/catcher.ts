import fs from 'node:fs';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';

export interface MailCatcher {
  port: number;
  dir: string;
  close(): Promise<void>;
}

/**
 * The development SMTP server: accepts every message on loopback and writes it, as received,
 * to `<dir>/<time>-<n>.eml`. Production sends to SMTP_URL instead.
 */
export async function startMailCatcher(opts: { port: number; dir: string; host?: string }): Promise<MailCatcher> {
  fs.mkdirSync(opts.dir, { recursive: true });
  let count = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    size: 10 * 1024 * 1024,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const file = path.join(opts.dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${++count}.eml`);
        fs.writeFile(file, Buffer.concat(chunks), (err) => callback(err ?? null));
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '127.0.0.1', () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  // A client that vanishes mid-conversation (a worker SIGKILLed while sending) resets its
  // connection; smtp-server reports that as an 'error' event, which unhandled would end the
  // whole process that hosts the catcher (found by the chaos run). Its email was not accepted;
  // the sender's retry sends it again.
  server.on('error', () => {});
  const address = server.server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  return { port, dir: opts.dir, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
