import Router from '@koa/router';
import type { AppState } from '../context';

type Doc = Record<string, unknown>;

const escape = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const code = (value: unknown) => `<pre>${escape(JSON.stringify(value, null, 2))}</pre>`;

/** A self-contained docs page (no CDN: it must work offline), rendered from the OpenAPI document. */
export function renderDocs(doc: Doc): string {
  const info = doc.info as { title: string; description: string };
  const paths = doc.paths as Record<string, Record<string, Doc>>;
  const schemas = (doc.components as { schemas: Record<string, unknown> }).schemas;
  const ops = Object.entries(paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => {
      const responses = op.responses as Record<
        string,
        { description: string; content?: { 'application/json': { schema: unknown } } }
      >;
      const body = (op.requestBody as { content: { 'application/json': { schema: unknown } } } | undefined)?.content[
        'application/json'
      ].schema;
      return `<section id="${escape(String(op.operationId))}">
<h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escape(path)}</code></h3>
<p>${escape(String(op.summary))}</p>
${op.parameters ? `<h4>Parameters</h4>${code(op.parameters)}` : ''}
${body ? `<h4>Request body</h4>${code(body)}` : ''}
<h4>Responses</h4><ul>${Object.entries(responses)
        .map(([status, r]) => `<li><b>${status}</b> ${escape(r.description)}</li>`)
        .join('')}</ul>
<details><summary>200 response schema</summary>${code(responses['200']?.content?.['application/json'].schema)}</details>
</section>`;
    }),
  );
  const description = escape(info.description)
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(/\n- /g, '<br>• ');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(info.title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#1a1a1a}
pre{background:#f5f5f7;padding:.75rem;overflow:auto;font-size:13px}section{border-top:1px solid #ddd;padding:.5rem 0}
.m{font:bold 12px monospace;padding:2px 6px;border-radius:3px;color:#fff}.get{background:#2b7}.post{background:#27c}.delete{background:#c33}</style>
</head><body><h1>${escape(info.title)}</h1><p>${description}</p>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).</p>
<h2>Operations</h2>${ops.join('\n')}
<h2>Schemas</h2>${Object.entries(schemas)
    .map(([name, s]) => `<h3 id="schema-${escape(name)}">${escape(name)}</h3>${code(s)}`)
    .join('\n')}
</body></html>`;
}

export function docsRoutes(doc: Doc): Router<AppState> {
  const router = new Router<AppState>();
  const html = renderDocs(doc);
  router.get('/openapi.json', (ctx) => {
    ctx.body = doc;
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = html;
  });
  return router;
}
