import { type z } from 'zod';
import { toMajor } from '../../domain/money';
import { ProviderError, ProviderWebhookError } from '../errors';
import { verify } from '../signature';
import type {
  CreatePaymentInput,
  CreateRefundInput,
  PaymentLookup,
  PaymentProvider,
  ProviderPayment,
  ProviderRefund,
  RefundLookup,
} from '../types';
import {
  mapErrorStatus,
  mapPayment,
  mapRefund,
  mapWebhook,
  parseBody,
  sandboxPaymentList,
  sandboxPaymentSchema,
  sandboxRefundList,
  sandboxRefundSchema,
} from './mapping';

export interface SandboxProviderOptions {
  baseUrl: string;
  apiKey: string;
  webhookSecret: string;
  /** Every call gives up after this long; the outcome is then unknown and must be asked for. */
  timeoutMs: number;
}

/** Errors from fetch that prove the request never reached the provider. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** The HTTP adapter for the provider sandbox (docs/provider-sandbox.md). */
export class SandboxProvider implements PaymentProvider {
  readonly name = 'sandbox';

  constructor(private readonly opts: SandboxProviderOptions) {}

  private async call<T extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    schema: T,
    body?: unknown,
    headers: Record<string, string> = {},
    allowNotFound = false,
  ): Promise<z.output<T> | null> {
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${this.opts.baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.opts.apiKey}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
      text = await res.text();
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      if (e.cause?.code && NOT_SENT.has(e.cause.code)) {
        throw new ProviderError('unavailable', `provider unreachable (${e.cause.code})`);
      }
      if (e.name === 'TimeoutError' || e.name === 'AbortError') {
        throw new ProviderError('timeout', `provider did not answer within ${this.opts.timeoutMs} ms`);
      }
      throw new ProviderError('timeout', `provider connection failed mid-request (${e.cause?.code ?? e.message})`);
    }
    if (allowNotFound && res.status === 404) return null;
    if (res.status < 200 || res.status >= 300) throw mapErrorStatus(res.status, text);
    return parseBody(schema, text);
  }

  async createPayment(input: CreatePaymentInput): Promise<ProviderPayment> {
    const body = {
      amount: toMajor(input.amountMinor, input.currency),
      currency: input.currency,
      mode: input.mode,
      ...(input.cardToken ? { cardToken: input.cardToken } : {}),
      ...(input.returnUrl ? { returnUrl: input.returnUrl } : {}),
      ...(input.webhookUrl ? { webhookUrl: input.webhookUrl } : {}),
      ...(input.saveCard ? { saveCard: true } : {}),
      ...(input.description ? { description: input.description } : {}),
      metadata: input.metadata,
    };
    const p = await this.call('POST', '/v1/payments', sandboxPaymentSchema, body, {
      'idempotency-key': input.idempotencyKey,
    });
    return mapPayment(p!);
  }

  async findPayment(by: { transactionId: string } | PaymentLookup): Promise<ProviderPayment | null> {
    if ('transactionId' in by) {
      const p = await this.call(
        'GET',
        `/v1/payments/${encodeURIComponent(by.transactionId)}`,
        sandboxPaymentSchema,
        undefined,
        {},
        true,
      );
      return p ? mapPayment(p) : null;
    }
    const list = await this.call(
      'GET',
      `/v1/payments?idempotencyKey=${encodeURIComponent(by.idempotencyKey)}`,
      sandboxPaymentList,
    );
    const first = list!.data[0];
    return first ? mapPayment(first) : null;
  }

  async cancelPayment(transactionId: string): Promise<ProviderPayment> {
    const p = await this.call(
      'POST',
      `/v1/payments/${encodeURIComponent(transactionId)}/cancel`,
      sandboxPaymentSchema,
      {},
    );
    return mapPayment(p!);
  }

  async createRefund(input: CreateRefundInput): Promise<ProviderRefund> {
    const body = {
      paymentId: input.transactionId,
      amount: toMajor(input.amountMinor, input.currency),
      currency: input.currency,
      reference_id: input.referenceId,
      ...(input.reason ? { reason: input.reason } : {}),
      ...(input.webhookUrl ? { webhookUrl: input.webhookUrl } : {}),
      metadata: input.metadata,
    };
    const r = await this.call('POST', '/v1/refunds', sandboxRefundSchema, body, {
      'idempotency-key': input.idempotencyKey,
    });
    return mapRefund(r!);
  }

  async findRefund(
    by: { refundId: string } | RefundLookup | { referenceId: string; transactionId: string },
  ): Promise<ProviderRefund | null> {
    if ('refundId' in by) {
      const r = await this.call(
        'GET',
        `/v1/refunds/${encodeURIComponent(by.refundId)}`,
        sandboxRefundSchema,
        undefined,
        {},
        true,
      );
      return r ? mapRefund(r) : null;
    }
    const query =
      'idempotencyKey' in by
        ? `idempotencyKey=${encodeURIComponent(by.idempotencyKey)}`
        : `reference_id=${encodeURIComponent(by.referenceId)}&paymentId=${encodeURIComponent(by.transactionId)}`;
    const list = await this.call('GET', `/v1/refunds?${query}`, sandboxRefundList);
    const first = list!.data[0];
    return first ? mapRefund(first) : null;
  }

  parseWebhook(rawBody: string, headers: Record<string, string | string[] | undefined>) {
    const header = headers['sandbox-signature'];
    if (!verify(this.opts.webhookSecret, rawBody, Array.isArray(header) ? header[0] : header)) {
      throw new ProviderWebhookError('signature does not verify');
    }
    try {
      return mapWebhook(JSON.parse(rawBody));
    } catch (err) {
      throw new ProviderWebhookError(`unexpected webhook body: ${(err as Error).message.slice(0, 200)}`);
    }
  }
}
