import fs from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Email, Merchant } from '../../src/db/entities';
import { recordEmail } from '../../src/domain/emails';
import { startMailCatcher, type MailCatcher } from '../../dev/mail/catcher';
import { createEmailActivities } from '../../activities/emails';
import type { ActivityDeps } from '../../activities/deps';
import { createTestMerchant, openTestOrm } from '../helpers/stack';

/** The email outbox: recorded once, sent once over real SMTP, caught as .eml files. */
describe('email outbox and the local SMTP catcher', () => {
  let orm: MikroORM;
  let catcher: MailCatcher;
  let dir: string;

  beforeAll(async () => {
    orm = await openTestOrm();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mail-'));
    catcher = await startMailCatcher({ port: 0, dir });
  });
  afterAll(async () => {
    await catcher.close();
    await orm.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const activities = (smtpUrl: string) => createEmailActivities({ orm, smtpUrl } as unknown as ActivityDeps);

  async function record(dedupeKey: string) {
    const m = await createTestMerchant(orm, 'Mail merchant');
    return orm.em.fork().transactional(async (tx) => {
      const email = recordEmail(tx, {
        merchant: tx.getReference(Merchant, m.merchantId),
        dedupeKey,
        to: 'customer@example.com',
        subject: 'Your subscription is active',
        text: 'Thank you.',
      });
      await tx.flush();
      return email.id;
    });
  }

  it('sends an email once, as an .eml file with a stable Message-ID', async () => {
    const id = await record(`test:${Date.now()}`);
    const send = activities(`smtp://127.0.0.1:${catcher.port}`);
    expect(await send.sendEmail(id)).toBe('sent');
    expect(await send.sendEmail(id)).toBe('already_sent');
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.eml'));
    expect(files).toHaveLength(1);
    const eml = fs.readFileSync(path.join(dir, files[0]!), 'utf8');
    expect(eml).toMatch(/^Subject: Your subscription is active$/m);
    expect(eml).toMatch(/^To: customer@example\.com$/m);
    expect(eml).toContain(`<${id}@payments.local>`);
    const row = await orm.em.fork().findOneOrFail(Email, { id });
    expect(row).toMatchObject({ attempts: 1, lastError: null, sentAt: expect.any(Date) });
  });

  it('records the failure and throws (to be retried) when the SMTP server is unreachable', async () => {
    const id = await record(`test-fail:${Date.now()}`);
    await expect(activities('smtp://127.0.0.1:9').sendEmail(id)).rejects.toThrow(/not sent/);
    const row = await orm.em.fork().findOneOrFail(Email, { id });
    expect(row).toMatchObject({ attempts: 1, sentAt: null, lastError: expect.stringMatching(/ECONNREFUSED|connect/i) });
  });

  it('sends an email once when attempts overlap (it is claimed before sending)', async () => {
    const id = await record(`test-overlap:${Date.now()}`);
    const send = activities(`smtp://127.0.0.1:${catcher.port}`);
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => send.sendEmail(id)));
    const sent = results.filter((r) => r.status === 'fulfilled' && r.value === 'sent');
    expect(sent).toHaveLength(1);
    // The others found it sent, or held by the sender (retried later by their activity).
    for (const r of results) {
      if (r.status === 'rejected') expect((r.reason as { type?: string }).type).toBe('email_busy');
    }
    const files = fs.readdirSync(dir).filter((f) => fs.readFileSync(path.join(dir, f), 'utf8').includes(`<${id}@`));
    expect(files).toHaveLength(1);
    expect(await send.sendEmail(id)).toBe('already_sent');
  });

  it('gives up on an SMTP server that accepts but never answers, within its timeouts', async () => {
    const silent = net.createServer(() => undefined); // accepts, never greets
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const id = await record(`test-silent:${Date.now()}`);
      const started = Date.now();
      const port = (silent.address() as net.AddressInfo).port;
      await expect(activities(`smtp://127.0.0.1:${port}`).sendEmail(id)).rejects.toThrow(/not sent/);
      expect(Date.now() - started).toBeLessThan(15_000);
      // Released at once: the next attempt may send it.
      const row = await orm.em.fork().findOneOrFail(Email, { id });
      expect(row).toMatchObject({ sentAt: null, claimedUntil: null, lastError: expect.any(String) });
    } finally {
      silent.close();
    }
  });

  it('records one email per dedupe key', async () => {
    const key = `test-dup:${Date.now()}`;
    await record(key);
    await expect(record(key)).rejects.toThrow(/unique|duplicate/i);
  });
});
