import { ApplicationFailure } from '@temporalio/activity';
import { createTransport, type Transporter } from 'nodemailer';
import { Email } from '../src/db/entities';
import type { ActivityDeps } from './deps';

export type SendResult = 'sent' | 'already_sent' | 'missing';

/**
 * Sends outbox emails over SMTP (nodemailer; SMTP_URL, by default the local catcher of
 * `npm start`). At most once per row: a sent email is never sent again. SMTP has no
 * idempotency key, so a crash between the server's acceptance and recording `sentAt` can
 * resend; the Message-ID is stable (`<email id@domain>`) so mail systems can drop the copy.
 */
export function createMailer({ orm, smtpUrl, mailFrom = 'Payments <no-reply@payments.local>' }: ActivityDeps) {
  let transport: Transporter | undefined;
  const mailer = () => (transport ??= createTransport(smtpUrl ?? 'smtp://127.0.0.1:2525'));

  /** Sends one email unless it was sent already; throws (after recording why) when SMTP fails. */
  async function send(emailId: string): Promise<SendResult> {
    const em = orm.em.fork();
    const email = await em.findOne(Email, { id: emailId });
    if (!email) return 'missing';
    if (email.sentAt) return 'already_sent';
    try {
      await mailer().sendMail({
        from: mailFrom,
        to: email.to,
        subject: email.subject,
        text: email.text,
        messageId: `<${email.id}@payments.local>`,
      });
    } catch (err) {
      email.attempts += 1;
      email.lastError = (err as Error).message.slice(0, 500);
      await em.flush();
      throw new Error(`email ${emailId} not sent: ${email.lastError}`);
    }
    email.attempts += 1;
    email.sentAt = new Date();
    email.lastError = null;
    await em.flush();
    return 'sent';
  }

  /**
   * Best effort, right after the change that recorded them: sends what it can within the
   * budget and answers the ids left unsent (the workflow sends those with retries).
   */
  async function sendNow(emailIds: string[], budgetMs = 3000): Promise<string[]> {
    const deadline = Date.now() + budgetMs;
    const left: string[] = [];
    for (const id of emailIds) {
      if (Date.now() >= deadline) {
        left.push(id);
        continue;
      }
      try {
        await send(id);
      } catch {
        left.push(id);
      }
    }
    return left;
  }

  return { send, sendNow };
}

export function createEmailActivities(deps: ActivityDeps, mailer = createMailer(deps)) {
  return {
    async sendEmail(emailId: string): Promise<SendResult> {
      try {
        return await mailer.send(emailId);
      } catch (err) {
        throw ApplicationFailure.retryable((err as Error).message, 'email_failed');
      }
    },
  };
}
