import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import type { AppState } from '../context';
import { errors } from '../../errors';

type Doc = Record<string, unknown>;

/**
 * /docs is Swagger UI (swagger-ui-dist, a production dependency) served from node_modules: no
 * CDN, no external URL, so it works offline (docs/decisions/0049-openapi-viewer.md). The page loads
 * the viewer's bundle and stylesheet from /docs/assets/, then the initializer below, which reads
 * /openapi.json and points the try-it console at the origin the page came from.
 */
const VIEWER_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/** The only files served from the viewer's package, by name: nothing else in it is reachable. */
const VIEWER_FILES: Record<string, string> = {
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
  'index.css': 'text/css; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

/**
 * The viewer's configuration (served as /docs/assets/viewer.js: the CSP allows no inline script).
 * - The try-it console calls the page's own origin first (same origin: no CORS), whatever
 *   PUBLIC_BASE_URL the document's `servers` names; that one stays in the list after it.
 * - The filter box also matches summaries, operation ids and methods (Swagger UI's own matches
 *   tags and paths only).
 * - No validator badge (it would call an outside service); credentials are not kept in
 *   localStorage.
 */
const VIEWER_JS = `'use strict';
(function () {
  function matches(phrase, values) {
    return values.some(function (v) {
      return v !== undefined && v !== null && String(v).toLowerCase().indexOf(phrase) !== -1;
    });
  }
  function SearchPlugin(system) {
    var Im = system.Im;
    return {
      fn: {
        opsFilter: function (taggedOps, phrase) {
          if (!phrase) return taggedOps;
          var q = String(phrase).toLowerCase();
          return taggedOps
            .map(function (tagObj, tag) {
              if (matches(q, [tag])) return tagObj;
              var ops = Im.Map.isMap(tagObj) ? tagObj.get('operations') : undefined;
              if (!Im.List.isList(ops)) return null;
              var kept = ops.filter(function (op) {
                var o = Im.Map.isMap(op.get('operation')) ? op.get('operation') : Im.Map();
                return matches(q, [op.get('path'), op.get('method'), o.get('summary'), o.get('operationId')]);
              });
              return kept.size > 0 ? tagObj.set('operations', kept) : null;
            })
            .filter(function (tagObj) {
              return tagObj !== null;
            });
        },
      },
    };
  }
  function start(spec) {
    var here = { url: window.location.origin, description: 'This server (the origin of this page)' };
    spec.servers = [here].concat(
      (spec.servers || []).filter(function (s) {
        return s.url.replace(/\\/$/, '') !== here.url;
      }),
    );
    window.ui = SwaggerUIBundle({
      spec: spec,
      dom_id: '#swagger-ui',
      presets: [SwaggerUIBundle.presets.apis],
      plugins: [SearchPlugin],
      deepLinking: true,
      filter: true,
      displayRequestDuration: true,
      requestSnippetsEnabled: true,
      persistAuthorization: false,
      validatorUrl: null,
    });
  }
  fetch('/openapi.json', { headers: { accept: 'application/json' } })
    .then(function (res) {
      if (!res.ok) throw new Error('GET /openapi.json answered ' + res.status);
      return res.json();
    })
    .then(start)
    .catch(function (err) {
      var p = document.createElement('p');
      p.className = 'docs-error';
      p.textContent = 'The API description could not be loaded: ' + err.message;
      document.getElementById('swagger-ui').appendChild(p);
    });
})();
`;

/**
 * Tight: scripts and styles from this origin only (no inline script, no eval), the try-it
 * console's requests to this origin only, images from here or the stylesheet's data: icons.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface Asset {
  body: Buffer;
  type: string;
  /** Content hash: the page asks for `?v=<hash>`, so a cached copy is never stale. */
  hash: string;
}

let loaded: Map<string, Asset> | undefined;

/** Read once per process (about 2 MB); every app in the process shares them. */
function assets(): Map<string, Asset> {
  if (loaded) return loaded;
  const asset = (body: Buffer, type: string): Asset => ({
    body,
    type,
    hash: createHash('sha256').update(body).digest('hex').slice(0, 16),
  });
  loaded = new Map(
    Object.entries(VIEWER_FILES).map(([name, type]) => [
      name,
      asset(fs.readFileSync(path.join(VIEWER_DIR, name)), type),
    ]),
  );
  loaded.set('viewer.js', asset(Buffer.from(VIEWER_JS), 'application/javascript; charset=utf-8'));
  return loaded;
}

/** The page: the viewer's files and its configuration, all from /docs/assets/. */
export function renderDocs(title: string): string {
  const all = assets();
  const url = (name: string) => `/docs/assets/${name}?v=${all.get(name)!.hash}`;
  const escaped = title.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escaped}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" type="image/png" sizes="32x32" href="${url('favicon-32x32.png')}">
<link rel="icon" type="image/png" sizes="16x16" href="${url('favicon-16x16.png')}">
<link rel="stylesheet" href="${url('swagger-ui.css')}">
<link rel="stylesheet" href="${url('index.css')}">
</head>
<body>
<div id="swagger-ui"></div>
<noscript><p>The API reference needs JavaScript. The OpenAPI 3.1 document: <a href="/openapi.json">/openapi.json</a>.</p></noscript>
<script src="${url('swagger-ui-bundle.js')}"></script>
<script src="${url('viewer.js')}"></script>
</body>
</html>
`;
}

export function docsRoutes(doc: Doc): Router<AppState> {
  const router = new Router<AppState>();
  const html = renderDocs((doc.info as { title: string }).title);
  const files = assets();
  router.get('/openapi.json', (ctx) => {
    ctx.body = doc;
  });
  router.get('/docs', (ctx) => {
    ctx.set({
      'Content-Security-Policy': DOCS_CSP,
      'Cache-Control': 'no-cache',
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
    });
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = html;
  });
  // `:file` is one path segment, looked up by name in the allow-list: `..`, an encoded slash or
  // any other file of the package is simply not there (404).
  router.get('/docs/assets/:file', (ctx) => {
    const file = files.get(ctx.params.file ?? '');
    if (!file) throw errors.notFound('Docs asset');
    ctx.set({ 'Cache-Control': 'public, max-age=31536000, immutable', 'X-Content-Type-Options': 'nosniff' });
    ctx.type = file.type;
    ctx.body = file.body;
  });
  return router;
}
