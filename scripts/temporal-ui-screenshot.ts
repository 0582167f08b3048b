/**
 * Screenshots of the Temporal UI showing what the platform's workflows tell an operator
 * (docs/observability.md, "Reading workflows in the Temporal UI"):
 *   docs/images/temporal-ui-workflows.png         the list: type, externalId and status columns
 *   docs/images/temporal-ui-workflow-summary.png  a payment's User Metadata tab: its summary and details
 *   docs/images/temporal-ui-workflow-memo.png     its Memo tab: the request id
 *
 * With `npm start` running (same DATA_DIR, PORT, TEMPORAL_UI_PORT as it), this makes a few
 * records for the demo merchant through the API (fixed externalIds, so a second run finds the
 * same ones), then drives headless Chromium (`chromium` on PATH, or CHROMIUM_PATH) over the
 * DevTools protocol on a pipe: no browser library needed.
 *   node --import tsx scripts/temporal-ui-screenshot.ts [outDir]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { Client, Connection } from '@temporalio/client';
import { loadConfigOrExit } from '../src/config';
import type { DemoCredentials } from '../src/domain/demo';
import { paymentWorkflowId } from '../workflows/paymentApi';
import { customSearchAttributes } from '../workflows/searchAttributes';

const WIDTH = 1920;
const HEIGHT = 960;

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const outDir = path.resolve(process.argv[2] ?? 'docs/images');
  const demo = JSON.parse(fs.readFileSync(path.join(config.dataDir, 'demo-merchant.json'), 'utf8')) as DemoCredentials;
  const api = `http://127.0.0.1:${config.PORT}`;
  const ui = `http://127.0.0.1:${config.TEMPORAL_UI_PORT}`;
  const namespace = config.TEMPORAL_NAMESPACE;

  const paymentId = await makeRecords(api, demo);
  const connection = await Connection.connect({ address: config.temporalAddress });
  const client = new Client({ connection, namespace });
  const payment = await client.workflow.getHandle(paymentWorkflowId(paymentId)).describe();
  await connection.close();

  const browser = await Browser.launch();
  try {
    // The list's columns are the UI's per-browser setting (its local storage): type, the platform's
    // search attributes (merchant, externalId, statuses), start.
    await browser.open(`${ui}/namespaces/${namespace}/workflows`);
    await browser.evaluate(
      `localStorage.setItem('namespace-workflow-table-columns', ${JSON.stringify(JSON.stringify({ [namespace]: listColumns() }))})`,
    );
    const query = encodeURIComponent(`MerchantId = "${demo.merchantId}"`);
    await browser.open(`${ui}/namespaces/${namespace}/workflows?query=${query}`);
    await browser.waitForText(['paymentWorkflow', 'refundWorkflow', 'subscriptionWorkflow']);
    await browser.screenshot(path.join(outDir, 'temporal-ui-workflows.png'), 480);

    const run = `${ui}/namespaces/${namespace}/workflows/${encodeURIComponent(payment.workflowId)}/${payment.runId}`;
    await browser.open(`${run}/user-metadata`);
    await browser.waitForText(['Payment 12.50 EUR', 'Merchant callbacks']);
    // The UI sizes a markdown frame to its content once, on load; headless, that can be before
    // the frame's styles apply, which cuts the details short. Sized again to the content's end.
    await browser.evaluate(
      `document.querySelectorAll('iframe').forEach((f) => {
        const content = f.contentDocument?.querySelector('main');
        if (content) f.height = Math.max(100, Math.ceil(content.getBoundingClientRect().bottom) + 16) + 'px';
      })`,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    await browser.screenshot(path.join(outDir, 'temporal-ui-workflow-summary.png'), 840);
    await browser.open(`${run}/memo`);
    // The request that started the workflow (on a second run: the first run's request).
    await browser.waitForText([String(payment.memo?.requestId)]);
    await browser.screenshot(path.join(outDir, 'temporal-ui-workflow-memo.png'), 500);
  } finally {
    await browser.close();
  }
  process.stdout.write(`Screenshots in ${outDir}\n`);
}

/** The list is filtered by merchant: its column is left out, as are PaymentId and the run id. */
function listColumns() {
  const attributes = customSearchAttributes
    .map((key) => key.name)
    .filter((name) => name !== 'MerchantId' && name !== 'PaymentId');
  return [
    { label: 'Status', pinned: true },
    { label: 'Workflow ID', pinned: true },
    { label: 'Type', pinned: false },
    ...attributes.map((label) => ({ label, pinned: false })),
  ];
}

/** A few records of every kind for the demo merchant; answers the id of the 12.50 EUR payment. */
async function makeRecords(api: string, demo: DemoCredentials): Promise<string> {
  const auth = `Basic ${Buffer.from(`${demo.publicKey}:${demo.secretKey}`).toString('base64')}`;
  const post = async (route: string, body: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(`${api}${route}`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const answer = (await res.json()) as Record<string, unknown>;
    if (res.status >= 400) throw new Error(`POST ${route}: ${res.status} ${JSON.stringify(answer)}`);
    return answer;
  };
  const customer = { email: 'customer@example.com', name: 'Ada' };
  const paid = await post('/payments', {
    amount: 12.5,
    currency: 'EUR',
    externalId: 'order-1001',
    customer,
    cardToken: 'tok_success',
  });
  await post('/payments', { amount: 49, currency: 'USD', externalId: 'order-1002', customer });
  await post('/payments', {
    amount: 1200,
    currency: 'JPY',
    externalId: 'order-1003',
    customer,
    cardToken: 'tok_decline',
  });
  await post(`/payments/${paid.id as string}/refund`, { externalId: 'refund-1001', amount: 5 });
  await post('/subscriptions', {
    amount: 9.99,
    currency: 'EUR',
    billingIntervalDays: 30,
    externalId: 'plan-2001',
    customer,
    cardToken: 'tok_success',
  });
  return paid.id as string;
}

/** Headless Chromium driven over the DevTools protocol on a pipe (fds 3 and 4, NUL-separated JSON). */
class Browser {
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private sessionId: string | undefined;

  private constructor(
    private readonly child: ChildProcess,
    private readonly userDataDir: string,
  ) {
    let buffered = '';
    (child.stdio[4] as Readable).on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let end: number;
      while ((end = buffered.indexOf('\0')) >= 0) {
        const message = JSON.parse(buffered.slice(0, end)) as {
          id?: number;
          result?: unknown;
          error?: { message: string };
        };
        buffered = buffered.slice(end + 1);
        const waiter = message.id === undefined ? undefined : this.pending.get(message.id);
        if (!waiter) continue;
        this.pending.delete(message.id!);
        if (message.error) waiter.reject(new Error(message.error.message));
        else waiter.resolve(message.result);
      }
    });
  }

  static async launch(): Promise<Browser> {
    const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ui-screenshot-'));
    const child = spawn(
      process.env.CHROMIUM_PATH ?? 'chromium',
      [
        '--headless=new',
        '--no-sandbox',
        '--disable-gpu',
        '--hide-scrollbars',
        '--remote-debugging-pipe',
        `--user-data-dir=${userDataDir}`,
        `--window-size=${WIDTH},${HEIGHT}`,
        'about:blank',
      ],
      { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] },
    );
    const browser = new Browser(child, userDataDir);
    const { targetId } = (await browser.send('Target.createTarget', { url: 'about:blank' })) as { targetId: string };
    const { sessionId } = (await browser.send('Target.attachToTarget', { targetId, flatten: true })) as {
      sessionId: string;
    };
    browser.sessionId = sessionId;
    await browser.send('Emulation.setDeviceMetricsOverride', {
      width: WIDTH,
      height: HEIGHT,
      deviceScaleFactor: 1,
      mobile: false,
    });
    await browser.send('Page.enable');
    return browser;
  }

  private send(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = ++this.nextId;
    const message = { id, method, params, ...(this.sessionId ? { sessionId: this.sessionId } : {}) };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      (this.child.stdio[3] as Writable).write(`${JSON.stringify(message)}\0`);
    });
  }

  async evaluate(expression: string): Promise<unknown> {
    const { result } = (await this.send('Runtime.evaluate', { expression, returnByValue: true })) as {
      result: { value?: unknown };
    };
    return result.value;
  }

  async open(url: string): Promise<void> {
    await this.send('Page.navigate', { url });
    await this.until(async () => (await this.evaluate('document.readyState')) === 'complete', `load ${url}`);
  }

  /** Until every text is on the page, then a moment for the last renders. */
  async waitForText(texts: string[]): Promise<void> {
    // The UI renders markdown (a summary, details) in same-origin iframes: their text counts too.
    const expression = `(() => {
      const frames = [...document.querySelectorAll('iframe')].map((f) => f.contentDocument?.body?.innerText ?? '');
      const t = [document.body.innerText, ...frames].join('\\n');
      return ${JSON.stringify(texts)}.every((s) => t.includes(s));
    })()`;
    await this.until(
      async () => (await this.evaluate(expression)) === true,
      `the page to show ${texts.join(', ')}`,
    ).catch(async (err: Error) => {
      const shown = String(await this.evaluate('document.body.innerText')).slice(0, 2000);
      throw new Error(`${err.message}; the page shows:\n${shown}`);
    });
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }

  private async until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  /** The top `height` pixels of the page. */
  async screenshot(file: string, height = HEIGHT): Promise<void> {
    const { data } = (await this.send('Page.captureScreenshot', {
      format: 'png',
      clip: { x: 0, y: 0, width: WIDTH, height, scale: 1 },
    })) as { data: string };
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, Buffer.from(data, 'base64'));
  }

  async close(): Promise<void> {
    this.sessionId = undefined;
    await this.send('Browser.close').catch(() => undefined);
    if (this.child.exitCode === null) {
      await new Promise((resolve) => {
        this.child.once('exit', resolve);
        setTimeout(() => this.child.kill('SIGKILL'), 5000).unref();
      });
    }
    fs.rmSync(this.userDataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`screenshot failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
