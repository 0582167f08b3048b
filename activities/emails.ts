import { ApplicationFailure } from '@temporalio/activity';
import { createTransport, type Transporter } from 'nodemailer';
import { Email } from '../src/db/entities';
import type { ActivityDeps } from './deps';

/**
 * Sends one outbox email over SMTP (nodemailer; SMTP_URL, by default the local catcher of
 * `npm start`). At most once per row: a sent email is never sent again. SMTP has no
 * idempotency key, so a crash between the server's acceptance and recording `sentAt` can
 * resend; the Message-ID is stable (`<email id@domain>`) so mail systems can drop the copy.
 */
export function createEmailActivities({ orm, smtpUrl, mailFrom = 'Payments <no-reply@payments.local>' }: ActivityDeps) {
  let transport: Transporter | undefined;
  const mailer = () => (transport ??= createTransport(smtpUrl ?? 'smtp://127.0.0.1:2525'));

  return {
    async sendEmail(emailId: string): Promise<'sent' | 'already_sent' | 'missing'> {
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
        throw ApplicationFailure.retryable(`email ${emailId} not sent: ${email.lastError}`, 'email_failed');
      }
      email.attempts += 1;
      email.sentAt = new Date();
      email.lastError = null;
      await em.flush();
      return 'sent';
    },
  };
}
