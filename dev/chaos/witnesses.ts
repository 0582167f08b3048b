import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type {
  DisputeRow,
  EmailRow,
  InvoiceRow,
  LedgerEntryView,
  PaymentRow,
  RefundRow,
  SubscriptionRow,
} from './invariants';

/** Reading the three witnesses after a run: the provider's ledger, our database, the mail folder. */

export async function readLedger(sandboxUrl: string, token?: string): Promise<LedgerEntryView[]> {
  const res = await fetch(`${sandboxUrl}/_admin/ledger`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  if (!res.ok) throw new Error(`sandbox ledger: ${res.status}`);
  const { entries } = (await res.json()) as {
    entries: Array<Omit<LedgerEntryView, 'amountMinor'> & { amount: number; currency: string }>;
  };
  // The ledger speaks major units; two-decimal currencies only in a chaos run (USD).
  return entries.map((e) => ({ ...e, amountMinor: Math.round(e.amount * 100), metadata: e.metadata ?? {} }));
}

export interface DatabaseWitness {
  payments: PaymentRow[];
  refunds: RefundRow[];
  disputes: DisputeRow[];
  invoices: InvoiceRow[];
  subscriptions: SubscriptionRow[];
  emails: EmailRow[];
}

export async function readDatabase(databaseUrl: string, merchantIds: string[]): Promise<DatabaseWitness> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const q = async <T>(sql: string) => (await client.query(sql, [merchantIds])).rows as T[];
    const num = (v: unknown) => Number(v);
    const payments = await q<Record<string, unknown>>(
      `select id, merchant_id, status, amount_minor, amount_refunded_minor, amount_pending_refund_minor, card_token
         from payments where merchant_id = any($1)`,
    );
    const refunds = await q<Record<string, unknown>>(
      `select id, payment_id, status, amount_minor from refunds where merchant_id = any($1)`,
    );
    const disputes = await q<Record<string, unknown>>(
      `select id, payment_id, status, amount_minor, provider_dispute_id from disputes where merchant_id = any($1)`,
    );
    const invoices = await q<Record<string, unknown>>(
      `select id, subscription_id, status, amount_minor from invoices where merchant_id = any($1)`,
    );
    const subscriptions = await q<Record<string, unknown>>(
      `select id, status from subscriptions where merchant_id = any($1)`,
    );
    // A withheld email (decision 0066: `to` empty, settled unsent) is never delivered, by design.
    const emails = await q<Record<string, unknown>>(
      `select id, sent_at from emails where merchant_id = any($1) and "to" <> ''`,
    );
    return {
      payments: payments.map((r) => ({
        id: String(r.id),
        merchantId: String(r.merchant_id),
        status: String(r.status),
        amountMinor: num(r.amount_minor),
        amountRefundedMinor: num(r.amount_refunded_minor),
        amountPendingRefundMinor: num(r.amount_pending_refund_minor),
        cardToken: (r.card_token as string | null) ?? null,
      })),
      refunds: refunds.map((r) => ({
        id: String(r.id),
        paymentId: String(r.payment_id),
        status: String(r.status),
        amountMinor: num(r.amount_minor),
      })),
      disputes: disputes.map((r) => ({
        id: String(r.id),
        paymentId: String(r.payment_id),
        status: String(r.status),
        amountMinor: num(r.amount_minor),
        providerDisputeId: String(r.provider_dispute_id),
      })),
      invoices: invoices.map((r) => ({
        id: String(r.id),
        subscriptionId: String(r.subscription_id),
        status: String(r.status),
        amountMinor: num(r.amount_minor),
      })),
      subscriptions: subscriptions.map((r) => ({ id: String(r.id), status: String(r.status) })),
      emails: emails.map((r) => ({ id: String(r.id), sentAt: (r.sent_at as Date | null) ?? null })),
    };
  } finally {
    await client.end();
  }
}

/**
 * Records that are neither terminal nor legitimately waiting: token payments still `created`
 * (the workflow is still finding out), payments still `requires_action` (the load acts on every
 * authentication page it is shown, and the run's short PAYMENT_EXPIRY_SECONDS voids one nobody
 * acted on) or `processing` (the sandbox settles each a few seconds later), refunds in flight, emails not sent yet, invoices being
 * charged, renewals overdue (a period that ended 30 s ago and was not renewed: the workers are
 * behind). A hosted payment nobody paid, an open invoice waiting for its retry, are legitimately
 * waiting.
 */
export async function countUnsettled(databaseUrl: string, merchantIds: string[]): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const count = async (sql: string) => Number((await client.query(sql, [merchantIds])).rows[0].n);
    return {
      'token payments created': await count(
        `select count(*) n from payments where merchant_id = any($1) and status = 'created' and card_token is not null`,
      ),
      'payments awaiting authentication': await count(
        `select count(*) n from payments where merchant_id = any($1) and status = 'requires_action'`,
      ),
      'payments processing': await count(
        `select count(*) n from payments where merchant_id = any($1) and status = 'processing'`,
      ),
      'invoices awaiting authentication or processing': await count(
        `select count(*) n from invoices where merchant_id = any($1) and status in ('requires_action', 'processing')`,
      ),
      'refunds pending': await count(
        `select count(*) n from refunds where merchant_id = any($1) and status = 'pending'`,
      ),
      'emails unsent': await count(`select count(*) n from emails where merchant_id = any($1) and sent_at is null`),
      'invoices charging': await count(
        `select count(*) n from invoices where merchant_id = any($1) and status = 'open'
            and (next_attempt_at is null or next_attempt_at <= now())`,
      ),
      'renewals overdue': await count(
        `select count(*) n from subscriptions where merchant_id = any($1) and status = 'active'
            and current_period_end < now() - interval '30 seconds'`,
      ),
    };
  } finally {
    await client.end();
  }
}

/**
 * Samples the ledger until stopped: for each capture seen `requires_action` or `processing`, the
 * moment the last request that saw it so was sent (invariant 7 orders an invoice's attempts
 * with it). A failed sample (the sandbox busy) is skipped.
 */
export function watchLedgerOpen(sandboxUrl: string, everyMs = 3000, token?: string) {
  const openSeenAt: Record<string, number> = {};
  let stopped = false;
  let samples = 0;
  const done = (async () => {
    while (!stopped) {
      const sentAt = Date.now();
      try {
        for (const e of await readLedger(sandboxUrl, token)) {
          if (e.type === 'capture' && (e.status === 'requires_action' || e.status === 'processing') && e.transactionId)
            openSeenAt[e.transactionId] = sentAt;
        }
        samples++;
      } catch {
        // the next sample
      }
      const wait = Math.max(0, everyMs - (Date.now() - sentAt));
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();
  return {
    openSeenAt,
    async stop(): Promise<number> {
      stopped = true;
      await done;
      return samples;
    },
  };
}

/** The Message-ID of every mail file and when it was written (one element per file, duplicates kept). */
export function readDeliveries(mailDir: string | null): Array<{ messageId: string; at: number }> {
  if (!mailDir || !fs.existsSync(mailDir)) return [];
  const deliveries: Array<{ messageId: string; at: number }> = [];
  for (const name of fs.readdirSync(mailDir)) {
    if (!name.endsWith('.eml')) continue;
    const file = path.join(mailDir, name);
    const head = fs.readFileSync(file, 'utf8').split(/\r?\n\r?\n/, 1)[0] ?? '';
    const match = /^message-id:\s*(<[^>]+>)/im.exec(head);
    if (match) deliveries.push({ messageId: match[1]!, at: fs.statSync(file).mtimeMs });
  }
  return deliveries;
}
