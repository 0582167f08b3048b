import { execFileSync } from 'node:child_process';
import dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDeadlineResolver } from '../../src/net/deadlineResolver';

const A = 1;
const AAAA = 28;
const RDATA: Record<number, Buffer> = {
  [A]: Buffer.from([10, 1, 2, 3]),
  [AAAA]: Buffer.from('20010db8000000000000000000000123', 'hex'), // 2001:db8::123
};

type Reply = 'silence' | 'records' | 'empty' | 'nxdomain';

/**
 * A tiny DNS server on 127.0.0.1 (UDP): `reply` decides, per question type, to stay silent,
 * answer one record (A 10.1.2.3, AAAA 2001:db8::123), answer none (the name has no record of
 * that type) or answer NXDOMAIN. Records the question types it received.
 */
async function startDnsServer(reply: (qtype: number) => Reply) {
  const socket = dgram.createSocket('udp4');
  const questions: number[] = [];
  socket.on('message', (query, peer) => {
    // A 12-byte header, then the question: length-prefixed labels up to a zero byte, QTYPE, QCLASS.
    let end = 12;
    while (query[end] !== 0) end += query[end]! + 1;
    end += 5;
    const qtype = query.readUInt16BE(end - 4);
    questions.push(qtype);
    const what = reply(qtype);
    if (what === 'silence') return;
    const rdata = what === 'records' ? RDATA[qtype] : undefined;
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2); // the query's id
    header.writeUInt16BE(0x8180 | (what === 'nxdomain' ? 3 : 0), 2); // response, RD, RA, rcode
    header.writeUInt16BE(1, 4); // one question, echoed
    header.writeUInt16BE(rdata ? 1 : 0, 6); // answers
    const answer = Buffer.alloc(rdata ? 12 : 0);
    if (rdata) {
      answer.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      answer.writeUInt16BE(qtype, 2);
      answer.writeUInt16BE(1, 4); // class IN
      answer.writeUInt32BE(60, 6); // TTL
      answer.writeUInt16BE(rdata.length, 10);
    }
    const response = Buffer.concat([header, query.subarray(12, end), answer, rdata ?? Buffer.alloc(0)]);
    socket.send(response, peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    server: `127.0.0.1:${socket.address().port}`,
    questions,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

/** Settles `promise`, answering how long it took and its value or error. */
async function timed<T>(promise: Promise<T>) {
  const started = Date.now();
  try {
    return { value: await promise, ms: Date.now() - started };
  } catch (error) {
    return { error: error as NodeJS.ErrnoException, ms: Date.now() - started };
  }
}

const EXPECTED = [
  { address: '10.1.2.3', family: 4 },
  { address: '2001:db8::123', family: 6 },
];

/**
 * Issue 43: a delivery attempt is bounded to 10 s including name resolution. The resolver asks
 * real (tiny) DNS servers over real UDP sockets; nothing of node:dns is mocked.
 */
describe('the deadline resolver', () => {
  let hanging: Awaited<ReturnType<typeof startDnsServer>>;
  let answering: Awaited<ReturnType<typeof startDnsServer>>;

  beforeAll(async () => {
    hanging = await startDnsServer(() => 'silence');
    answering = await startDnsServer(() => 'records');
  });
  afterAll(async () => {
    await hanging.close();
    await answering.close();
  });

  it('answers every address a server gives, IPv4 first', async () => {
    await expect(createDeadlineResolver({ servers: [answering.server] })('hook.merchant.example')).resolves.toEqual(
      EXPECTED,
    );
  });

  it('gives up by the deadline when the server never answers, with code ETIMEOUT', async () => {
    const before = hanging.questions.length;
    const { error, ms } = await timed(
      createDeadlineResolver({ servers: [hanging.server] })('hangs.example', { timeoutMs: 500 }),
    );
    expect(error?.code).toBe('ETIMEOUT');
    expect(ms).toBeGreaterThanOrEqual(450);
    expect(ms).toBeLessThan(2_000);
    // It did ask (both families), rather than fail for another reason.
    expect(hanging.questions.slice(before)).toEqual(expect.arrayContaining([A, AAAA]));
  });

  it('gives up by the deadline however many servers c-ares would try in turn', async () => {
    // Alone, c-ares tries each server in turn, backing off: about 3 s here for a 500 ms budget.
    const more = [await startDnsServer(() => 'silence'), await startDnsServer(() => 'silence')];
    try {
      const servers = [hanging.server, ...more.map((s) => s.server)];
      const { error, ms } = await timed(createDeadlineResolver({ servers })('hangs.example', { timeoutMs: 500 }));
      expect(error?.code).toBe('ETIMEOUT');
      expect(ms).toBeLessThan(1_000);
    } finally {
      await Promise.all(more.map((s) => s.close()));
    }
  });

  it('answers a name at once while 20 resolutions of names whose DNS hangs are pending', async () => {
    const hangs = createDeadlineResolver({ servers: [hanging.server] });
    const pending = Array.from({ length: 20 }, (_, i) => timed(hangs(`hangs-${i}.example`, { timeoutMs: 3_000 })));
    const answered = await timed(createDeadlineResolver({ servers: [answering.server] })('hook.merchant.example'));
    expect(answered.value).toEqual(EXPECTED);
    expect(answered.ms).toBeLessThan(1_000);
    const hung = await Promise.all(pending);
    expect(hung.map((h) => h.error?.code)).toEqual(Array(20).fill('ETIMEOUT'));
    expect(Math.max(...hung.map((h) => h.ms))).toBeLessThan(3_600);
  });

  it('does not wait for the thread pool, which dns.lookup does (the contrast)', async () => {
    // Fill libuv's thread pool with opens of a FIFO nobody writes to, as hanging getaddrinfo
    // calls would; free it by opening the write end (O_RDWR never blocks on Linux).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pool-'));
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const poolSize = Number(process.env['UV_THREADPOOL_SIZE']) || 4;
    const blocked = Array.from({ length: poolSize }, () => fs.promises.open(fifo, 'r'));
    let systemLookup: Promise<unknown> | undefined;
    try {
      let systemAnswered = false;
      systemLookup = lookup('localhost').then(() => (systemAnswered = true));
      const answered = await timed(createDeadlineResolver({ servers: [answering.server] })('hook.merchant.example'));
      expect(answered.value).toEqual(EXPECTED);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(systemAnswered).toBe(false);
    } finally {
      const writer = fs.openSync(fifo, fs.constants.O_RDWR);
      for (const handle of await Promise.all(blocked)) await handle.close();
      fs.closeSync(writer);
      await systemLookup;
      fs.rmSync(dir, { recursive: true });
    }
  });

  it('answers localhost and IP literals without asking DNS', async () => {
    const resolve = createDeadlineResolver({ servers: [hanging.server] });
    const before = hanging.questions.length;
    const loopback = [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
    await expect(resolve('localhost', { timeoutMs: 200 })).resolves.toEqual(loopback);
    await expect(resolve('LocalHost.', { timeoutMs: 200 })).resolves.toEqual(loopback);
    await expect(resolve('api.localhost', { timeoutMs: 200 })).resolves.toEqual(loopback);
    await expect(resolve('203.0.113.7')).resolves.toEqual([{ address: '203.0.113.7', family: 4 }]);
    await expect(resolve('2001:db8::1')).resolves.toEqual([{ address: '2001:db8::1', family: 6 }]);
    expect(hanging.questions.length).toBe(before);
  });

  it('fails at once with ENOTFOUND when the server answers NXDOMAIN', async () => {
    const nxdomain = await startDnsServer(() => 'nxdomain');
    try {
      const { error, ms } = await timed(createDeadlineResolver({ servers: [nxdomain.server] })('gone.example'));
      expect(error?.code).toBe('ENOTFOUND');
      expect(ms).toBeLessThan(1_000);
    } finally {
      await nxdomain.close();
    }
  });

  it('answers the IPv4 addresses soon when the server drops AAAA questions, not at the deadline', async () => {
    const noAAAA = await startDnsServer((qtype) => (qtype === A ? 'records' : 'silence'));
    try {
      const { value, ms } = await timed(
        createDeadlineResolver({ servers: [noAAAA.server], familyGraceMs: 300 })('v4only.example', {
          timeoutMs: 5_000,
        }),
      );
      expect(value).toEqual([{ address: '10.1.2.3', family: 4 }]);
      expect(ms).toBeGreaterThanOrEqual(250);
      expect(ms).toBeLessThan(1_500);
    } finally {
      await noAAAA.close();
    }
  });

  it('answers the family that has records when the other has none (ENODATA), else the telling error', async () => {
    const v4only = await startDnsServer((qtype) => (qtype === A ? 'records' : 'empty'));
    const noRecords = await startDnsServer(() => 'empty');
    const oddlyGone = await startDnsServer((qtype) => (qtype === A ? 'empty' : 'nxdomain'));
    try {
      await expect(createDeadlineResolver({ servers: [v4only.server] })('v4only.example')).resolves.toEqual([
        { address: '10.1.2.3', family: 4 },
      ]);
      await expect(createDeadlineResolver({ servers: [noRecords.server] })('bare.example')).rejects.toMatchObject({
        code: 'ENODATA',
      });
      await expect(createDeadlineResolver({ servers: [oddlyGone.server] })('odd.example')).rejects.toMatchObject({
        code: 'ENOTFOUND',
      });
    } finally {
      await Promise.all([v4only.close(), noRecords.close(), oddlyGone.close()]);
    }
  });
});
