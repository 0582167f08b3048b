import { formatMoney } from './money';
import type { Plan } from './subscriptionPlan';

/**
 * What an operator reads about a workflow in the Temporal UI without opening its history: a
 * one-line static summary and markdown details, set when the platform starts the workflow
 * (Temporal's user metadata). One pure function per kind of workflow.
 *
 * Kept to a few lines: the UI shows the details in a small frame. The status is the record's
 * search attribute (PaymentStatus, RefundStatus, SubscriptionStatus), kept current by the workflow.
 *
 * Only identifiers, amounts and facts about the workflow go in: never a secret, a card token, a
 * customer's email address or name, a URL the merchant gave (a callback URL may carry a token).
 * Text the merchant chose (externalId) is escaped, so it shows as text and never as markdown;
 * our own ids and codes (`pay_...`, `mer_...`, event types) need no escaping.
 *
 * Pure and deterministic: workflows import it too (a child workflow's summary).
 */
export interface WorkflowSummary {
  /** One line, at most SUMMARY_MAX_BYTES of UTF-8 (Temporal refuses a longer one). */
  staticSummary: string;
  /** Markdown, a few lines. */
  staticDetails: string;
}

/** Temporal's limit for a static summary. */
export const SUMMARY_MAX_BYTES = 200;
/** A merchant's externalId is cut to this many characters in the summary line (details keep it whole). */
const EXTERNAL_ID_MAX_CHARS = 64;

export interface PaymentSummaryInput {
  id: string;
  merchantId: string;
  externalId: string;
  amountMinor: number;
  currency: string;
  environment?: string;
  expiresAt?: Date;
  callbacks?: boolean;
}

export function paymentWorkflowSummary(p: PaymentSummaryInput): WorkflowSummary {
  const amount = formatMoney(p.amountMinor, p.currency);
  return {
    staticSummary: summaryLine([
      `Payment ${amount}`,
      ...(p.environment ? [p.environment] : []),
      `merchant ${p.merchantId}`,
      `externalId ${text(clip(p.externalId))}`,
    ]),
    staticDetails: details(`Payment ${p.id}${p.environment ? ` · ${p.environment}` : ''}`, [
      ['Merchant', p.merchantId],
      ['Amount', amount],
      ['External id', text(p.externalId)],
      ['Expires at', p.expiresAt?.toISOString()],
      ['Merchant callbacks', yesNo(p.callbacks)],
    ]),
  };
}

export interface RefundSummaryInput {
  id: string;
  paymentId: string;
  merchantId: string;
  externalId: string;
  amountMinor: number;
  currency: string;
  callbacks?: boolean;
}

export function refundWorkflowSummary(r: RefundSummaryInput): WorkflowSummary {
  const amount = formatMoney(r.amountMinor, r.currency);
  return {
    staticSummary: summaryLine([
      `Refund ${amount} of ${r.paymentId}`,
      `merchant ${r.merchantId}`,
      `externalId ${text(clip(r.externalId))}`,
    ]),
    staticDetails: details(`Refund ${r.id}`, [
      ['Payment', r.paymentId],
      ['Merchant', r.merchantId],
      ['Amount', amount],
      ['External id', text(r.externalId)],
      ['Merchant callbacks', yesNo(r.callbacks)],
    ]),
  };
}

export interface SubscriptionSummaryInput {
  id: string;
  merchantId: string;
  externalId: string;
  currency: string;
  plan: Plan;
  environment?: string;
  /** Whether the customer authorizes a card on a hosted page first (no card token given). */
  needsAuthorization?: boolean;
  callbacks?: boolean;
}

export function subscriptionWorkflowSummary(s: SubscriptionSummaryInput): WorkflowSummary {
  const phases = s.plan.phases;
  const evergreen = phases[phases.length - 1];
  const price = evergreen
    ? `${formatMoney(evergreen.amountMinor, s.currency)} every ${days(evergreen.billingIntervalDays)}`
    : '';
  return {
    staticSummary: summaryLine([
      `Subscription ${price}${phases.length > 1 ? ` (after ${phases.length - 1} earlier phase${phases.length > 2 ? 's' : ''})` : ''}`,
      ...(s.environment ? [s.environment] : []),
      `merchant ${s.merchantId}`,
      `externalId ${text(clip(s.externalId))}`,
    ]),
    staticDetails: details(`Subscription ${s.id}${s.environment ? ` · ${s.environment}` : ''}`, [
      ['Merchant', s.merchantId],
      ['External id', text(s.externalId)],
      [
        'Plan',
        phases
          .map(
            (phase) =>
              `${formatMoney(phase.amountMinor, s.currency)} every ${days(phase.billingIntervalDays)}` +
              (phase.iterations === null ? ' from then on' : ` × ${phase.iterations}`),
          )
          .join(', then '),
      ],
      ['Retries after a failed charge', `${s.plan.retryScheduleDays.map(days).join(', ') || 'none'}`],
      [
        'Card',
        s.needsAuthorization === undefined
          ? undefined
          : s.needsAuthorization
            ? 'authorized by the customer on the hosted page'
            : 'token given by the merchant',
      ],
      ['Merchant callbacks', yesNo(s.callbacks)],
    ]),
  };
}

export interface MerchantEventsSummaryInput {
  merchantId: string;
  eventIds: string[];
  /** What the events are about (a payment, refund or subscription id), when known. */
  resourceId?: string;
  /** The event type, when one event is relayed. */
  type?: string;
  /** Who started the delivery: the record's own workflow, or the sweeper relaying a lost one. */
  startedBy: 'subscription' | 'payment' | 'sweeper';
}

export function merchantEventsWorkflowSummary(e: MerchantEventsSummaryInput): WorkflowSummary {
  const count = `${e.eventIds.length} event${e.eventIds.length === 1 ? '' : 's'}`;
  return {
    staticSummary: summaryLine([
      `Merchant callback${e.eventIds.length === 1 ? '' : 's'}: ${e.type ? e.type : count}${e.resourceId ? ` of ${e.resourceId}` : ''}`,
      `merchant ${e.merchantId}`,
    ]),
    staticDetails: details(`Merchant callback delivery (${count})`, [
      ['Merchant', e.merchantId],
      ['About', e.resourceId],
      ['Event type', e.type],
      ['Events', e.eventIds.join(', ')],
      [
        'Started by',
        e.startedBy === 'sweeper'
          ? 'the orphan sweeper (relaying an event a lost run never handed on)'
          : `the ${e.startedBy} workflow`,
      ],
    ]),
  };
}

/** The delivery workflow of one merchant (decision 0069): one run at a time, continued as new. */
export function eventDeliveriesWorkflowSummary(e: { merchantId: string }): WorkflowSummary {
  return {
    staticSummary: summaryLine([`Event deliveries`, `merchant ${e.merchantId}`]),
    staticDetails: details('Event deliveries of one merchant', [
      ['Merchant', e.merchantId],
      ['Delivers', 'every pending event to its callbackUrl and matching webhook endpoints, a few at a time'],
      ['What to read', 'GET /events/{id} shows each attempt; pending deliveries are rows of delivery_jobs'],
    ]),
  };
}

export function emailRelayWorkflowSummary(e: { emailId: string; merchantId: string }): WorkflowSummary {
  return {
    staticSummary: summaryLine([`Customer email ${e.emailId}`, `merchant ${e.merchantId}`]),
    staticDetails: details(`Customer email ${e.emailId}`, [
      ['Merchant', e.merchantId],
      ['Started by', 'the orphan sweeper (relaying an email a lost run never handed on)'],
      ['Recipient and text', 'in the `emails` table (never in Temporal)'],
    ]),
  };
}

/** A customer's card setup page, watched in case its webhook never comes (decision 0089). */
export function setupPageWorkflowSummary(p: {
  customerId: string;
  paymentMethodId: string;
  merchantId: string;
  processor: string;
}): WorkflowSummary {
  return {
    staticSummary: summaryLine([`Card setup page ${p.paymentMethodId}`, `customer ${p.customerId}`, p.processor]),
    staticDetails: details(`Card setup page ${p.paymentMethodId}`, [
      ['Merchant', p.merchantId],
      ['Customer', p.customerId],
      ['Processor', p.processor],
      [
        'Does',
        "asks the processor at growing intervals (for 25 hours) and keeps the card once the customer completes the page, if the processor's webhook has not already",
      ],
    ]),
  };
}

export function sweepOrphansWorkflowSummary(s: { everySeconds: number; kinds: readonly string[] }): WorkflowSummary {
  return {
    staticSummary: summaryLine([`Orphan sweep every ${s.everySeconds} s`, s.kinds.join(', ')]),
    staticDetails: details('Orphan sweep', [
      ['Looks after', s.kinds.join(', ')],
      [
        'Does',
        'starts the workflow of a record left without one (the API died or Temporal was unreachable after its commit)',
      ],
    ]),
  };
}

/** Parts joined by a middle dot, whitespace folded, cut to SUMMARY_MAX_BYTES. */
export function summaryLine(parts: string[]): string {
  return truncateUtf8(parts.join(' · ').replace(/\s+/g, ' ').trim(), SUMMARY_MAX_BYTES);
}

/**
 * Merchant text as markdown text: inline markdown characters escaped, line breaks and control
 * characters folded to spaces (the value never starts a line, so block syntax cannot apply).
 */
export function text(value: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is removed
  return value.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').replace(/[\\`*_[\]<>|~&]/g, '\\$&');
}

function clip(value: string): string {
  const chars = [...value];
  return chars.length > EXTERNAL_ID_MAX_CHARS ? `${chars.slice(0, EXTERNAL_ID_MAX_CHARS - 1).join('')}…` : value;
}

/** At most `max` bytes of UTF-8, cut at a character, never after a lone escaping backslash. */
export function truncateUtf8(value: string, max: number): string {
  if (utf8Length(value) <= max) return value;
  let out = '';
  let bytes = 0;
  for (const ch of value) {
    const size = utf8Length(ch);
    if (bytes + size > max - 3) break; // room for the ellipsis (3 bytes)
    out += ch;
    bytes += size;
  }
  return `${out.replace(/\\$/, '')}…`;
}

function utf8Length(value: string): number {
  let bytes = 0;
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return bytes;
}

function details(title: string, rows: Array<[string, string | undefined]>): string {
  const lines = rows.filter(([, value]) => value !== undefined && value !== '').map(([k, v]) => `- ${k}: ${v}`);
  return [`**${title}**`, '', ...lines].join('\n');
}

function days(n: number): string {
  return `${n} day${n === 1 ? '' : 's'}`;
}

function yesNo(value: boolean | undefined): string | undefined {
  return value === undefined ? undefined : value ? 'yes' : 'no';
}
