import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import vm from 'node:vm';
import { startTestApi, type TestApi } from '../helpers/stack';

/**
 * /docs: Swagger UI served from node_modules (no external URL), its assets from an allow-list,
 * and the initializer that points the try-it console at the page's own origin.
 */
const VIEWER_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));
/** A PUBLIC_BASE_URL that is not the origin the page is loaded from. */
const PUBLIC_BASE_URL = 'http://127.0.0.1:9';

/** A raw GET: the path is sent as written (fetch would normalise `..` segments away). */
function rawGet(base: string, rawPath: string): Promise<{ status: number; type: string; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    http
      .get({ hostname, port, path: rawPath }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
      })
      .on('error', reject);
  });
}

describe('/docs: the OpenAPI viewer (no auth)', () => {
  let api: TestApi;
  let html: string;
  let page: Response;

  beforeAll(async () => {
    api = await startTestApi({ settings: { publicBaseUrl: PUBLIC_BASE_URL } });
    page = await fetch(`${api.baseUrl}/docs`);
    html = await page.text();
  });
  afterAll(async () => {
    await api.close();
  });

  /** Every src and href of the page. */
  const references = () => [...html.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => m[1]!);

  it('GET /docs is an HTML page that loads the viewer from this server only', () => {
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const refs = references();
    expect(refs).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^\/docs\/assets\/swagger-ui-bundle\.js\?v=[0-9a-f]{16}$/),
        expect.stringMatching(/^\/docs\/assets\/swagger-ui\.css\?v=[0-9a-f]{16}$/),
        expect.stringMatching(/^\/docs\/assets\/viewer\.js\?v=[0-9a-f]{16}$/),
      ]),
    );
    for (const ref of refs) expect(ref).toMatch(/^\/(docs\/assets\/[\w.-]+\?v=[0-9a-f]{16}|openapi\.json)$/);
    expect(html).not.toMatch(/\/\/[a-z0-9]/i); // no absolute or protocol-relative URL anywhere
    expect(html).not.toMatch(/<script>|<style|\son\w+=/i); // nothing inline: the CSP allows none
  });

  it('GET /docs is sent with a Content-Security-Policy that allows this origin only', () => {
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp.split('; ')).toEqual(
      expect.arrayContaining([
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
      ]),
    );
    expect(csp).not.toMatch(/unsafe-|https?:|\*/);
    expect(page.headers.get('cache-control')).toBe('no-cache');
  });

  it.each([
    ['swagger-ui-bundle.js', 'application/javascript; charset=utf-8'],
    ['swagger-ui.css', 'text/css; charset=utf-8'],
    ['index.css', 'text/css; charset=utf-8'],
    ['favicon-32x32.png', 'image/png'],
    ['favicon-16x16.png', 'image/png'],
  ])('serves the viewer file %s from the package, as %s, cached for long', async (name, type) => {
    const ref = references().find((r) => r.startsWith(`/docs/assets/${name}?`));
    expect(ref).toBeDefined();
    const res = await fetch(`${api.baseUrl}${ref}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(type);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(Buffer.from(await res.arrayBuffer()).equals(fs.readFileSync(path.join(VIEWER_DIR, name)))).toBe(true);
  });

  it('the initializer points the try-it console at the origin of the page, before PUBLIC_BASE_URL', async () => {
    const ref = references().find((r) => r.startsWith('/docs/assets/viewer.js?'))!;
    const res = await fetch(`${api.baseUrl}${ref}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    const code = await res.text();
    expect(code).not.toMatch(/https?:/);

    // Run it as the browser would, with the viewer stubbed: the page's origin is the test API.
    let config: { spec: { servers: { url: string }[]; components: unknown }; [key: string]: unknown } | undefined;
    const configured = new Promise<void>((resolve) => {
      const SwaggerUIBundle = Object.assign(
        (c: typeof config) => {
          config = c;
          resolve();
        },
        { presets: { apis: 'apis-preset' } },
      );
      vm.runInNewContext(code, {
        window: { location: { origin: api.baseUrl } },
        document: {},
        fetch: (url: string, init: RequestInit) => fetch(`${api.baseUrl}${url}`, init),
        SwaggerUIBundle,
      });
    });
    await configured;
    expect(config!.spec.servers.map((s) => s.url)).toEqual([api.baseUrl, PUBLIC_BASE_URL]);
    expect(config).toMatchObject({ dom_id: '#swagger-ui', validatorUrl: null, persistAuthorization: false });
    // The console's auth box: the document declares HTTP Basic.
    expect(config!.spec.components).toMatchObject({
      securitySchemes: { basicAuth: { type: 'http', scheme: 'basic' } },
    });
  });

  it('an unknown asset, or a file of the package not on the list, is 404 with the JSON error body', async () => {
    for (const name of ['nope.js', 'package.json', 'swagger-ui-bundle.js.map', 'index.html']) {
      const res = await fetch(`${api.baseUrl}/docs/assets/${name}`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = (await res.json()) as Record<string, unknown>;
      expect(Object.keys(body).sort()).toEqual(['code', 'details', 'message']);
      expect(body.code).toBe('not_found');
    }
  });

  it.each([
    '/docs/assets/..%2f..%2fpackage.json',
    '/docs/assets/..%2F..%2F..%2F..%2Fpackage.json',
    '/docs/assets/../../package.json',
    '/docs/assets/%2e%2e%2fpackage.json',
    '/docs/assets/swagger-ui.css%2f..%2f..%2fpackage.json',
    '/docs/assets/%E0%A4%A',
    '/docs/assets/swagger-ui.css%00',
  ])('a traversal attempt or a malformed name (%s) is 404', async (rawPath) => {
    const res = await rawGet(api.baseUrl, rawPath);
    expect(res.status).toBe(404);
    expect(res.type).toMatch(/^application\/json/);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'not_found' });
    expect(res.body).not.toContain('"name"');
  });
});
