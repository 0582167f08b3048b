import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { createSandbox, type RunningSandbox } from '../../dev/sandbox/server';
import { SandboxProvider } from '../../src/providers/sandbox/client';
import { ProviderError } from '../../src/providers/errors';
import type { Faults } from '../../dev/sandbox/state';

/**
 * The sandbox adapter (src/providers/sandbox/client.ts) against the real sandbox and real sockets:
 * what each kind of failure is classified as decides whether a payment is retried, failed or
 * reconciled, so a call that may have been performed must never read as `unavailable`.
 */

const API_KEY = 'sk_sandbox_adapter';
const SECRET = 'whsec_sandbox_adapter';

let sandbox: RunningSandbox;
const connections: net.Socket[] = [];

beforeAll(async () => {
  const app = createSandbox({ apiKey: API_KEY, webhookSecret: SECRET });
  sandbox = await app.listen(0, '127.0.0.1');
});
afterAll(async () => {
  await sandbox.close();
  for (const socket of connections) socket.destroy();
});
afterEach(() => setFaults({}));

async function setFaults(faults: Partial<Faults>): Promise<void> {
  const res = await fetch(`${sandbox.url}/_admin/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(faults),
  });
  expect(res.status).toBe(200);
}

async function capturesUnder(key: string): Promise<number> {
  const res = await fetch(`${sandbox.url}/_admin/ledger`);
  const { entries } = (await res.json()) as { entries: Array<{ type: string; idempotencyKey: string }> };
  return entries.filter((e) => e.type === 'capture' && e.idempotencyKey === key).length;
}

const adapter = (baseUrl: string, timeoutMs = 2000) =>
  new SandboxProvider({ baseUrl, apiKey: API_KEY, webhookSecret: SECRET, timeoutMs });

const cardPayment = (idempotencyKey = `pay_${randomUUID()}`) => ({
  idempotencyKey,
  amountMinor: 1234,
  currency: 'USD',
  mode: 'card' as const,
  cardToken: 'tok_success',
  saveCard: false,
  expiresAt: new Date(Date.now() + 60_000),
  metadata: { paymentId: idempotencyKey },
});

async function failure(call: Promise<unknown>): Promise<ProviderError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

/** A local server that answers every request with `handle` (raw sockets). */
async function rawServer(handle: (socket: net.Socket) => void): Promise<{ url: string; close(): Promise<void> }> {
  const server = net.createServer((socket) => {
    connections.push(socket);
    handle(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('the sandbox adapter over HTTP', () => {
  it('captures a card payment: the answer is mapped to minor units, one capture in the ledger', async () => {
    const input = cardPayment();
    const payment = await adapter(sandbox.url).createPayment(input);
    expect(payment).toMatchObject({ status: 'succeeded', amountMinor: 1234, currency: 'USD' });
    expect(payment.transactionId).toEqual(expect.any(String));
    expect(await capturesUnder(input.idempotencyKey)).toBe(1);
    // Found again by its key, and by its transaction; an unknown transaction is null (404).
    const provider = adapter(sandbox.url);
    expect(
      await provider.findPayment({ idempotencyKey: input.idempotencyKey, mode: 'card', notBefore: new Date(0) }),
    ).toMatchObject({ transactionId: payment.transactionId });
    expect(await provider.findPayment({ transactionId: payment.transactionId })).toMatchObject({ status: 'succeeded' });
    expect(await provider.findPayment({ transactionId: 'pi_unknown' })).toBeNull();
  });

  it('sends calls one after another on one kept-alive connection', async () => {
    const seen = new Set<unknown>();
    const counting = http.createServer((req, res) => {
      seen.add(req.socket);
      req.pipe(
        http.request(`${sandbox.url}${req.url}`, { method: req.method, headers: req.headers }, (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        }),
      );
    });
    await new Promise<void>((resolve) => counting.listen(0, '127.0.0.1', resolve));
    try {
      const provider = adapter(`http://127.0.0.1:${(counting.address() as AddressInfo).port}`);
      for (let i = 0; i < 3; i++) expect((await provider.createPayment(cardPayment())).status).toBe('succeeded');
      expect(seen.size).toBe(1);
    } finally {
      counting.closeAllConnections();
      await new Promise((resolve) => counting.close(resolve));
    }
  });

  it('a refused connection is unavailable: nothing reached the provider', async () => {
    const closed = await rawServer(() => undefined);
    await closed.close();
    const err = await failure(adapter(closed.url).createPayment(cardPayment()));
    expect(err.kind).toBe('unavailable');
    expect(err.message).toContain('ECONNREFUSED');
  });

  it('503 is unavailable, and nothing was captured', async () => {
    await setFaults({ payments: 'unavailable' });
    const input = cardPayment();
    expect((await failure(adapter(sandbox.url).createPayment(input))).kind).toBe('unavailable');
    expect(await capturesUnder(input.idempotencyKey)).toBe(0);
  });

  it('no answer in time is a timeout, although the provider captured', async () => {
    await setFaults({ payments: 'timeout' });
    const input = cardPayment();
    const started = Date.now();
    const err = await failure(adapter(sandbox.url, 300).createPayment(input));
    expect(err.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await capturesUnder(input.idempotencyKey)).toBe(1);
  });

  it('a malformed 200 answer is an invalid response, although the provider captured', async () => {
    await setFaults({ payments: 'invalid' });
    const input = cardPayment();
    expect((await failure(adapter(sandbox.url).createPayment(input))).kind).toBe('invalid_response');
    expect(await capturesUnder(input.idempotencyKey)).toBe(1);
  });

  it('a connection closed after the request was sent is a timeout (perhaps performed), not unavailable', async () => {
    const server = await rawServer((socket) => socket.once('data', () => socket.destroy()));
    try {
      const err = await failure(adapter(server.url).createPayment(cardPayment()));
      expect(err.kind).toBe('timeout');
      expect(err.message).toContain('mid-request');
    } finally {
      await server.close();
    }
  });

  it('an answer cut off mid-body is a timeout (perhaps performed), never parsed', async () => {
    const server = await rawServer((socket) =>
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{"object":"pay');
        setTimeout(() => socket.destroy(), 20);
      }),
    );
    try {
      expect((await failure(adapter(server.url).createPayment(cardPayment()))).kind).toBe('timeout');
    } finally {
      await server.close();
    }
  });
});

describe('payments decided later (issue 42)', () => {
  it('maps requires_action with its actionUrl, its cancel, and an off-session tok_3ds_offsession charge', async () => {
    const provider = adapter(sandbox.url);
    const pp = await provider.createPayment({ ...cardPayment(), cardToken: 'tok_3ds' });
    expect(pp).toMatchObject({
      status: 'requires_action',
      actionUrl: `${sandbox.url}/authenticate/${pp.transactionId}`,
    });
    const cancelled = await provider.cancelPayment(pp.transactionId);
    expect(cancelled).toMatchObject({ status: 'canceled', actionUrl: null });

    const onSession = await provider.createPayment({ ...cardPayment(), cardToken: 'tok_3ds_offsession' });
    expect(onSession).toMatchObject({ status: 'succeeded', actionUrl: null });
    const offSession = await provider.createPayment({
      ...cardPayment(),
      cardToken: 'tok_3ds_offsession',
      offSession: true,
    });
    expect(offSession.status).toBe('requires_action');
    expect(offSession.actionUrl).toContain('/authenticate/');
  });

  it('maps processing, found again by transaction once settled', async () => {
    const provider = adapter(sandbox.url);
    const pp = await provider.createPayment({ ...cardPayment(), cardToken: 'tok_processing_fail' });
    expect(pp).toMatchObject({ status: 'processing', actionUrl: null, failureCode: null });
    await fetch(`${sandbox.url}/_admin/settle-payment`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ transactionId: pp.transactionId, status: 'failed' }),
    });
    expect(await provider.findPayment({ transactionId: pp.transactionId })).toMatchObject({
      status: 'failed',
      failureCode: 'debit_failed',
    });
  });

  it('a status nobody knows is invalid_response (the outcome unknown, asked again), never a refusal', async () => {
    const key = `pay_${randomUUID()}`;
    await setFaults({ payments: 'unknown_status' });
    const err = await failure(adapter(sandbox.url).createPayment(cardPayment(key)));
    expect(err.kind).toBe('invalid_response');
    expect(err.ambiguous).toBe(true);
    expect(err.message).toContain('on_hold');
    // Performed: found under its key once the answers are known again.
    await setFaults({});
    expect(
      await adapter(sandbox.url).findPayment({ idempotencyKey: key, mode: 'card', notBefore: new Date(0) }),
    ).toMatchObject({
      status: 'succeeded',
    });
    expect(await capturesUnder(key)).toBe(1);
  });
  it('a dispute whose status nobody knows is invalid_response (retryable, asked again), never a refusal', async () => {
    const key = `pay_${randomUUID()}`;
    const pp = await adapter(sandbox.url).createPayment({ ...cardPayment(key), cardToken: 'tok_dispute' });
    expect(pp.status).toBe('succeeded');
    const lookup = async () => {
      const res = await fetch(`${sandbox.url}/v1/disputes?paymentId=${pp.transactionId}`, {
        headers: { authorization: `Bearer ${API_KEY}` },
      });
      return ((await res.json()) as { data: Array<{ id: string }> }).data;
    };
    const deadline = Date.now() + 10_000;
    while ((await lookup()).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const [opened] = await lookup();
    expect(opened).toBeDefined();
    const disputeId = opened!.id;
    await setFaults({ disputes: 'unknown_status' });
    for (const call of [
      adapter(sandbox.url).findDispute(disputeId),
      adapter(sandbox.url).submitDisputeEvidence(disputeId, 'Receipt.'),
    ]) {
      const err = await failure(call);
      expect(err.kind).toBe('invalid_response');
      expect(err.ambiguous).toBe(true);
      expect(err.message).toContain('on_hold');
    }
    // Performed: the evidence shows once the answers are known again.
    await setFaults({});
    expect(await adapter(sandbox.url).findDispute(disputeId)).toMatchObject({ disputeId, status: 'under_review' });
  }, 20_000);
});
