import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docsPlugin } from './docs-page.js';

const app = Fastify();

describe('the /docs page', () => {
  beforeAll(async () => {
    await app.register(docsPlugin);
  });
  afterAll(() => app.close());

  it('is Redoc pointed at this origin’s OpenAPI document, under a CSP that admits nothing from elsewhere', async () => {
    const res = await app.inject({ method: 'GET', url: '/docs' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toMatch(/<redoc spec-url="\/v1\/openapi\.json"/);
    expect(res.body).toContain('<script src="/docs/redoc.standalone.js"></script>');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("connect-src 'self';");
    expect(csp).not.toMatch(/https?:|\*|unsafe-eval/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('serves the installed Redoc bundle itself, never a CDN', async () => {
    const res = await app.inject({ method: 'GET', url: '/docs/redoc.standalone.js' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    const installed = readFileSync(createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js'));
    expect(res.rawPayload.equals(installed)).toBe(true);
    expect(res.headers['content-security-policy']).toBeDefined();
  });
});
