import { ApplicationFailure } from '@temporalio/activity';
import { createTransport, type Transporter } from 'nodemailer';
import type { ActivityDeps } from './deps';
import { workerMetrics } from '../src/metrics/worker';
import type { ClaimedEmail } from '../src/domain/emails';
import { preparedRows, type PreparedStatement } from '../src/db/orm';

/** An email the SMTP server accepted (once per email sent: a prepared statement, issue 12). */
const RECORD_SENT: PreparedStatement = {
  name: 'record_email_sent',
  text: `update emails set sent_at = now(), claimed_until = null, last_error = null where id = $1`,
};

export type SendResult = 'sent' | 'already_sent' | 'missing';

/** SMTP waits are bounded, so a send never blocks past its activity's timeout (30 s). */
const SMTP_TIMEOUTS = { connectionTimeout: 5_000, greetingTimeout: 5_000, socketTimeout: 10_000 };
/** How long a claim holds an email: longer than the slowest send the timeouts above allow. */
export const EMAIL_CLAIM_SECONDS = 60;
const RECORD_SENT_RETRY_MS = 15_000;

/**
 * Sends outbox emails over SMTP (nodemailer; SMTP_URL, by default the local catcher of
 * `npm start`). An email is claimed first (a conditional UPDATE), so a retried or overlapping
 * attempt never sends it while another holds it, and a sent one is never sent again. SMTP has no
 * idempotency key: a crash between the server's acceptance and recording `sent_at` resends once
 * the claim lapses; the Message-ID is stable (`<email id@domain>`) so mail systems drop the copy.
 */
export function createMailer({ orm, smtpUrl, mailFrom = 'Payments <no-reply@payments.local>' }: ActivityDeps) {
  let transport: Transporter | undefined;
  // Pooled: a renewal storm sends one receipt per charge, and a new SMTP connection (greeting,
  // EHLO) per email cost more than the send; an idle connection closes after 2 s.
  const mailer = () =>
    (transport ??= createTransport({
      url: smtpUrl ?? 'smtp://127.0.0.1:2525',
      pool: true,
      maxConnections: 5,
      idleTimeout: 2_000,
      ...SMTP_TIMEOUTS,
    }));
  const sql = () => orm.em.getConnection();

  /** Sends one email unless it was sent already; throws (after recording why) when it cannot. */
  async function send(emailId: string): Promise<SendResult> {
    const claimed: Array<{ to: string; subject: string; text: string; dated_at: Date | null }> = await sql().execute(
      `update emails set claimed_until = now() + make_interval(secs => ?), attempts = attempts + 1
        where id = ? and sent_at is null and (claimed_until is null or claimed_until < now())
        returning "to", subject, text, dated_at`,
      [EMAIL_CLAIM_SECONDS, emailId],
    );
    const email = claimed[0];
    if (!email) {
      const rows: Array<{ sent_at: Date | null }> = await sql().execute(`select sent_at from emails where id = ?`, [
        emailId,
      ]);
      if (rows.length === 0) return 'missing';
      if (rows[0]!.sent_at) return 'already_sent';
      throw new EmailBusyError(emailId);
    }
    const { dated_at: datedAt, ...content } = email;
    return deliver({ id: emailId, ...content, datedAt: datedAt && new Date(datedAt) });
  }

  /** Sends an email this process holds the claim of, and records it sent (or releases the claim). */
  async function deliver(email: ClaimedEmail): Promise<'sent'> {
    const emailId = email.id;
    try {
      await mailer().sendMail({
        from: mailFrom,
        to: email.to,
        subject: email.subject,
        text: email.text,
        messageId: `<${emailId}@payments.local>`,
        // A test clock's time (decision 0090); otherwise the send's.
        ...(email.datedAt ? { date: email.datedAt } : {}),
      });
    } catch (err) {
      workerMetrics.email('failed');
      const reason = (err as Error).message.slice(0, 500);
      // Released at once: the next attempt need not wait for the claim to lapse.
      await sql().execute(`update emails set claimed_until = null, last_error = ? where id = ?`, [reason, emailId]);
      throw new Error(`email ${emailId} not sent: ${reason}`);
    }
    workerMetrics.email('sent');
    await recordSent(emailId);
    return 'sent';
  }

  /**
   * The server has the email: recording that must not fail on a database blip (a restart, a
   * failover), or the next attempt would send it again once the claim lapses. Retried for up to
   * 15 s (the activity's 30 s timeout bounds the whole send); only a crash of this process in
   * between leaves a resend (same Message-ID).
   */
  async function recordSent(emailId: string): Promise<void> {
    const deadline = Date.now() + RECORD_SENT_RETRY_MS;
    for (let delay = 250; ; delay = Math.min(delay * 2, 5000)) {
      try {
        await preparedRows(orm.em, RECORD_SENT, [emailId]);
        return;
      } catch (err) {
        if (Date.now() + delay > deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  /**
   * Sends what it can of `emailIds` within `withinMs` and answers the ids it could not confirm
   * sent (failed, busy, or still under way when the time is up: a send under way keeps its claim,
   * so whoever sends the id later finds it sent or busy, never sends it twice). `claimed`: those
   * of the ids whose recording statement claimed them for this call (sent without a claim of
   * their own; released at once when there is no time to send them).
   */
  async function sendWithin(emailIds: string[], withinMs: number, claimed: ClaimedEmail[] = []): Promise<string[]> {
    if (emailIds.length === 0) return emailIds;
    if (withinMs <= 0) {
      // Best effort: a claim not released lapses after EMAIL_CLAIM_SECONDS, and the send is retried then.
      await release(claimed.map((c) => c.id)).catch(() => undefined);
      return emailIds;
    }
    const held = new Map(claimed.map((c) => [c.id, c]));
    const sending = (id: string): Promise<SendResult> => {
      const email = held.get(id);
      return email ? deliver(email) : send(id);
    };
    let timer: NodeJS.Timeout | undefined;
    const timeUp = new Promise<'time_up'>((resolve) => (timer = setTimeout(() => resolve('time_up'), withinMs)));
    try {
      const results = await Promise.all(
        emailIds.map((id) => Promise.race([sending(id).catch(() => 'failed' as const), timeUp])),
      );
      return emailIds.filter((_, i) => results[i] !== 'sent' && results[i] !== 'already_sent');
    } finally {
      clearTimeout(timer);
    }
  }

  /** Claims given up unused: whoever sends these next need not wait for them to lapse. */
  async function release(emailIds: string[]): Promise<void> {
    if (emailIds.length === 0) return;
    await sql().execute(`update emails set claimed_until = null where id in (?) and sent_at is null`, [emailIds]);
  }

  return { send, sendWithin };
}

export type Mailer = ReturnType<typeof createMailer>;

/** Another attempt holds the email (it may be sending it right now). */
export class EmailBusyError extends Error {
  constructor(emailId: string) {
    super(`email ${emailId} is being sent by another attempt`);
    this.name = 'EmailBusyError';
  }
}

export function createEmailActivities(deps: ActivityDeps, mailer = createMailer(deps)) {
  return {
    async sendEmail(emailId: string): Promise<SendResult> {
      try {
        return await mailer.send(emailId);
      } catch (err) {
        const type = err instanceof EmailBusyError ? 'email_busy' : 'email_failed';
        throw ApplicationFailure.retryable((err as Error).message, type);
      }
    },
  };
}
