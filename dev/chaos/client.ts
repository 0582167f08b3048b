import type { Acknowledgement } from './invariants';

/** A merchant the load acts for (a test key). */
export interface ChaosMerchant {
  id: string;
  publicKey: string;
  secretKey: string;
}

export interface Answer {
  operation: string;
  /** HTTP status, or 0 when the connection failed (a killed API process, a reset). */
  status: number;
  code: string;
  startedAt: number;
  at: number;
  body: Record<string, unknown> | undefined;
}

/** Codes a 502/503 may carry: the documented "no outcome yet / provider trouble" answers. */
const UNAVAILABLE = new Set([502, 503]);

/**
 * Every request of the load goes through here, so every answer is counted: by operation,
 * status and code; 5xx answers other than the documented 502/503 are violations.
 */
export class Recorder {
  readonly answers: Answer[] = [];
  readonly acknowledgements: Acknowledgement[] = [];
  readonly serverErrors: Array<{ operation: string; status: number; code: string }> = [];
  readonly crossMerchantLeaks: Array<{ path: string; status: number }> = [];
  crossMerchantProbes = 0;

  constructor(
    private readonly apiUrl: string,
    private readonly timeoutMs = 30_000,
  ) {}

  async call(
    operation: string,
    merchant: ChaosMerchant,
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body?: unknown,
  ): Promise<Answer> {
    const startedAt = Date.now();
    let status = 0;
    let parsed: Record<string, unknown> | undefined;
    let code = '';
    try {
      const res = await fetch(`${this.apiUrl}${path}`, {
        method,
        headers: {
          authorization: `Basic ${Buffer.from(`${merchant.publicKey}:${merchant.secretKey}`).toString('base64')}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      status = res.status;
      const text = await res.text();
      try {
        parsed = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
      } catch {
        parsed = undefined;
      }
      code = typeof parsed?.code === 'string' ? parsed.code : status >= 400 ? 'non_json' : '';
    } catch (err) {
      code = (err as Error).name === 'TimeoutError' ? 'client_timeout' : 'connection_error';
    }
    const answer: Answer = { operation, status, code, startedAt, at: Date.now(), body: parsed };
    this.answers.push(answer);
    if (status >= 500 && !UNAVAILABLE.has(status)) this.serverErrors.push({ operation, status, code });
    return answer;
  }

  /**
   * Sends the same request (same externalId: the API dedupes it) until it gets an answer that
   * is not "try again" (a lost connection, 502, 503), or gives up after `attempts`.
   */
  async callUntilAnswered(
    operation: string,
    merchant: ChaosMerchant,
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body?: unknown,
    attempts = 20,
  ): Promise<Answer> {
    let answer = await this.call(operation, merchant, method, path, body);
    for (let i = 1; i < attempts && (answer.status === 0 || UNAVAILABLE.has(answer.status)); i++) {
      await sleep(Math.min(500 * 2 ** (i - 1), 5000));
      answer = await this.call(operation, merchant, method, path, body);
    }
    return answer;
  }

  acknowledge(ack: Acknowledgement): void {
    this.acknowledgements.push(ack);
  }

  /** Another merchant's record must be a 404 (never 200, never 403: its existence is not told). */
  async probeCrossMerchant(stranger: ChaosMerchant, path: string): Promise<void> {
    const answer = await this.call('cross-merchant probe', stranger, 'GET', path);
    if (answer.status === 0 || UNAVAILABLE.has(answer.status)) return;
    this.crossMerchantProbes++;
    if (answer.status !== 404) this.crossMerchantLeaks.push({ path, status: answer.status });
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
