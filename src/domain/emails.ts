import type { EntityManager } from '@mikro-orm/postgresql';
import { Email, type Merchant } from '../db/entities';
import { newId } from '../ids';

/**
 * Records an email in the outbox inside the caller's transaction; `dedupeKey` makes a retried
 * transaction record it once. Sending is the `sendEmail` activity's job, unless `claimSeconds` is
 * given: the row is then inserted claimed for that long (`attempts` 1, as the mailer's claim sets
 * it) for the caller to send right after the commit (a {@link ClaimedEmail}); anyone else finds it
 * busy until the claim is released or lapses.
 */
export function recordEmail(
  em: EntityManager,
  input: { merchant: Merchant; dedupeKey: string; to: string; subject: string; text: string },
  options?: { claimSeconds: number },
  /** Its Date header when not the send's time: a test clock's time (decision 0090). */
  datedAt: Date | null = null,
): Email {
  return em.create(Email, { ...emailFields(input, options, datedAt), merchant: input.merchant });
}

/**
 * An email row's fields as {@link recordEmail} stores them (its merchant aside): the same row
 * whichever path inserts it (an ORM flush, or one statement: recordPaidInvoiceCharge).
 */
export function emailFields(
  input: { dedupeKey: string; to: string; subject: string; text: string },
  options?: { claimSeconds: number },
  datedAt: Date | null = null,
) {
  const now = new Date();
  return {
    id: newId('email'),
    dedupeKey: input.dedupeKey,
    to: input.to,
    subject: clippedSubject(input.subject),
    text: input.text,
    attempts: options ? 1 : 0,
    sentAt: null,
    claimedUntil: options ? new Date(now.getTime() + options.claimSeconds * 1000) : null,
    lastError: null,
    datedAt,
    createdAt: now,
  };
}

/** Where the worker addresses subscription emails (decision 0066): set once, from NODE_ENV. */
export interface EmailProfile {
  /** NODE_ENV=production: test-environment records' emails go to the merchant (src/rules/emailRecipient.ts). */
  production: boolean;
}

/** Why a {@link recordWithheldEmail} row was never sent. */
export const WITHHELD_TEST_EMAIL =
  'withheld: a test-environment email in production goes to the merchant, and the merchant has no email';

/**
 * Records an email that is never sent (decision 0066): a test-environment record's email in
 * production when its merchant has no email. The row keeps the decision (and dedupes it): `to`
 * empty, settled at once (`sent_at` set, so no sender ever claims it), `last_error` saying why.
 */
export function recordWithheldEmail(
  em: EntityManager,
  input: { merchant: Merchant; dedupeKey: string; subject: string; text: string },
): Email {
  const now = new Date();
  return em.create(Email, {
    id: newId('email'),
    merchant: input.merchant,
    dedupeKey: input.dedupeKey,
    to: '',
    subject: clippedSubject(input.subject),
    text: input.text,
    attempts: 0,
    sentAt: now,
    claimedUntil: null,
    lastError: WITHHELD_TEST_EMAIL,
    datedAt: null,
    createdAt: now,
  });
}

/** A subject as stored: at most 255 characters (the column's length). */
export function clippedSubject(subject: string): string {
  return subject.length <= 255 ? subject : `${subject.slice(0, 254)}…`;
}

/**
 * An email its recording statement also claimed (as the mailer claims one), for the caller to
 * send at once: its content is here so that the send needs no claim statement of its own. Never
 * part of what a workflow is answered.
 */
export interface ClaimedEmail {
  id: string;
  to: string;
  subject: string;
  text: string;
  /** Its Date header (a test clock's time); absent: the send's time. */
  datedAt?: Date | null;
}
