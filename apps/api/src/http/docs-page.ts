import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { FastifyPluginAsync } from 'fastify';

const require = createRequire(import.meta.url);
/** Redoc's browser bundle as installed: served from here, never from a CDN (the machine may be offline). */
const REDOC_BUNDLE = require.resolve('redoc/bundles/redoc.standalone.js');
const BUNDLE_PATH = '/docs/redoc.standalone.js';

/**
 * Only this origin's script and document. Redoc needs 'unsafe-inline' styles (styled-components writes its own
 * <style> elements), `blob:` workers (its search index runs in a worker built from a blob) and `data:` images (its
 * link icons).
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'unsafe-inline'",
  'img-src data:',
  "connect-src 'self'",
  'worker-src blob:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Redoc keeps parameter, header and field names in its tables on one line, but lets inline code in descriptions
 * break at a hyphen (`Retry-After` over two lines on a phone), and its theme has no setting for that: the page's own
 * rule keeps each inline code whole, scrolling within itself when wider than the column.
 */
const PAGE_STYLE =
  ':not(pre) > code { white-space: nowrap; display: inline-block; max-width: 100%; overflow-x: auto; vertical-align: bottom; }';

/** Redoc's options, as attributes of its element (it reads `theme` as JSON, the others as strings). */
const REDOC_ATTRIBUTES: Record<string, string> = {
  'spec-url': '/v1/openapi.json',
  'expand-responses': '200,201',
  'required-props-first': 'true',
  theme: JSON.stringify({
    typography: { fontFamily: 'system-ui, sans-serif', headings: { fontFamily: 'system-ui, sans-serif' } },
  }),
};

const escapeAttribute = (value: string): string =>
  value.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;');

const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Convo API reference</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<redoc ${Object.entries(REDOC_ATTRIBUTES)
  .map(([name, value]) => `${name}="${escapeAttribute(value)}"`)
  .join(' ')}></redoc>
<script src="${BUNDLE_PATH}"></script>
</body>
</html>
`;

let bundle: Promise<Buffer> | undefined;

/**
 * `/docs`: the OpenAPI document served at /v1/openapi.json, rendered in the browser by Redoc, whose bundle this
 * server serves from the installed package.
 */
export const docsPlugin: FastifyPluginAsync = async (app) => {
  app.addHook('onRequest', async (_request, reply) => {
    reply.header('Content-Security-Policy', DOCS_CONTENT_SECURITY_POLICY);
    reply.header('X-Content-Type-Options', 'nosniff');
    reply.header('Referrer-Policy', 'no-referrer');
  });
  app.get('/docs', async (_request, reply) => reply.type('text/html; charset=utf-8').send(DOCS_HTML));
  app.get(BUNDLE_PATH, async (_request, reply) => {
    // Read once per process, on first use: most servers (and tests) never serve it.
    bundle ??= readFile(REDOC_BUNDLE);
    return reply
      .type('text/javascript; charset=utf-8')
      .header('Cache-Control', 'public, max-age=3600')
      .send(await bundle);
  });
};
