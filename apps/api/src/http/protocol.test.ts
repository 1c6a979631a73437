import { request as httpRequest } from 'node:http';
import {
  Contact,
  ContactList,
  type EndpointDefinition,
  ErrorBody,
  type OperationId,
  endpoints,
  fillPath,
  operationIds,
  toOpenApiPath,
} from '@convo/core';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type RequestOptions,
  type TestResponse,
  describeEachDialect,
  expectBody,
  expectExactError,
} from '../testing/harness.js';

const MISSING = 'x_missing';
const MiB = 1024 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

const operations = operationIds.map((id) => [id, endpoints[id] as EndpointDefinition] as const);
/** POST and PATCH operations that take a JSON body. */
// An upload's multipart body has tests of its own (files.test.ts).
const withBody = operations.filter(([, op]) => op.body !== undefined && !op.upload);
const pathOf = (op: EndpointDefinition) =>
  fillPath(op.path, { id: MISSING, tag: 'some-tag', delivery_id: MISSING, run_id: MISSING });

/** A JSON object of exactly `size` bytes. */
function jsonOfSize(size: number): string {
  const shell = '{"name":""}';
  const json = `{"name":"${'x'.repeat(size - shell.length)}"}`;
  expect(Buffer.byteLength(json)).toBe(size);
  return json;
}

describeEachDialect('HTTP protocol', (server) => {
  const statuses: number[] = [];

  /** Every request of this file goes through here, so that no 500 goes unnoticed. */
  async function send(method: string, path: string, options: RequestOptions = {}): Promise<TestResponse> {
    const res = await server().request(method, path, options);
    statuses.push(res.status);
    expect(res.status, `${method} ${path} answered 500: ${res.text}`).not.toBe(500);
    return res;
  }

  /** Straight over node:http, for what fetch would not send as is (a body without Content-Type). */
  function raw(
    method: string,
    path: string,
    options: { headers?: Record<string, string>; body?: string | Buffer } = {},
  ): Promise<TestResponse> {
    const url = new URL(server().baseUrl + path);
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          method,
          path: url.pathname + url.search,
          headers: { authorization: `Bearer ${server().keys.full}`, ...options.headers },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const headers = new Headers();
            for (const [name, value] of Object.entries(response.headers))
              if (typeof value === 'string') headers.set(name, value);
            statuses.push(response.statusCode ?? 0);
            resolve({ status: response.statusCode ?? 0, headers, text, body: text ? JSON.parse(text) : undefined });
          });
          response.on('error', reject);
        },
      );
      req.on('error', reject);
      if (options.body !== undefined) req.end(options.body);
      else req.end();
    });
  }

  let phoneSeq = 2_000_000;
  const phone = () => `+1415${phoneSeq++}`;

  describe('Content-Type of POST and PATCH', () => {
    describe.each(withBody)('%s', (_operationId: OperationId, op) => {
      it.each([
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'text/json',
        'application/jsonx',
        'application/json-patch+json',
      ])('Content-Type %s is 400 body content_type', async (contentType) => {
        const res = await send(op.method, pathOf(op), { rawBody: '{}', headers: { 'content-type': contentType } });
        expectExactError(res, 400, 'bad_request', { field: 'body', constraint: 'content_type' });
      });

      it('a body without Content-Type is 400 body content_type', async () => {
        const res = await raw(op.method, pathOf(op), { body: '{"name":"x"}' });
        expect(res.headers.get('x-request-id')).toMatch(REQUEST_ID);
        expectExactError(res, 400, 'bad_request', { field: 'body', constraint: 'content_type' });
      });

      it('malformed JSON is 400 body json', async () => {
        for (const rawBody of [
          '{"name": ',
          '{name: "x"}',
          "{'a': 1}",
          '{"a":1,}',
          'nul',
          Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
        ]) {
          const res = await send(op.method, pathOf(op), { rawBody, headers: { 'content-type': 'application/json' } });
          expectExactError(res, 400, 'bad_request', { field: 'body', constraint: 'json' });
        }
      });

      it('a JSON value other than an object is 400 body type', async () => {
        for (const value of [[], [{ name: 'x' }], 'a string', 42, true, null]) {
          const res = await send(op.method, pathOf(op), {
            rawBody: JSON.stringify(value),
            headers: { 'content-type': 'application/json' },
          });
          expectExactError(res, 400, 'bad_request', { field: 'body', constraint: 'type' });
        }
      });

      it('a body of 1 MiB + 1 byte is 400 body max_bytes', async () => {
        const res = await send(op.method, pathOf(op), {
          rawBody: jsonOfSize(MiB + 1),
          headers: { 'content-type': 'application/json' },
        });
        expectExactError(res, 400, 'bad_request', { field: 'body', constraint: 'max_bytes' });
      });

      it('deeply nested JSON (depth 100) is 400, not 500', async () => {
        const nestedArray = `${'['.repeat(100)}${']'.repeat(100)}`;
        const nestedObject = `${'{"a":'.repeat(100)}1${'}'.repeat(100)}`;
        for (const rawBody of [
          nestedArray,
          nestedObject,
          `{"name":${nestedArray}}`,
          `{"attributes":${nestedObject}}`,
          `{"x":${'['.repeat(5000)}${']'.repeat(5000)}}`,
        ]) {
          const res = await send(op.method, pathOf(op), { rawBody, headers: { 'content-type': 'application/json' } });
          expectExactError(res, 400, 'bad_request');
        }
      });
    });

    it.each([
      'application/json',
      'application/json; charset=utf-8',
      'application/json;charset=UTF-8',
      'Application/JSON',
    ])('accepts Content-Type %s', async (contentType) => {
      const p = phone();
      const res = await send('POST', '/contacts', {
        rawBody: JSON.stringify({ name: 'Típico', phone: p }),
        headers: { 'content-type': contentType },
      });
      expect(expectBody(res, 201, Contact)).toMatchObject({ name: 'Típico', phone: p });
    });

    it('accepts application/json; charset=utf-8 on PATCH', async () => {
      const created = expectBody(await send('POST', '/contacts', { body: { phone: phone() } }), 201, Contact);
      const res = await send('PATCH', `/contacts/${created.id}`, {
        rawBody: JSON.stringify({ name: 'Patched' }),
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
      expect(expectBody(res, 200, Contact).name).toBe('Patched');
    });

    it('a body of exactly 1 MiB is not refused for its size', async () => {
      const res = await send('POST', '/contacts', {
        rawBody: jsonOfSize(MiB),
        headers: { 'content-type': 'application/json' },
      });
      const body = expectExactError(res, 400, 'bad_request');
      expect(body.error.details?.constraint).not.toBe('max_bytes');
      expect(body.error.details?.issues ?? []).not.toContainEqual(expect.objectContaining({ constraint: 'max_bytes' }));
    });
  });

  describe('X-Request-Id', () => {
    it('is on every response: success, no content, 4xx and unknown paths', async () => {
      const created = expectBody(await send('POST', '/contacts', { body: { phone: phone() } }), 201, Contact);
      const responses = [
        await send('GET', '/contacts'),
        await send('GET', `/contacts/${created.id}`),
        await send('DELETE', `/contacts/${created.id}`),
        await send('POST', '/contacts', { body: {} }),
        await send('GET', '/contacts', { key: null }),
        await send('POST', '/contacts', { key: server().keys.readOnly, body: {} }),
        await send('GET', `/contacts/${MISSING}`),
        await send('GET', '/nope'),
        await send('GET', '/nope', { key: null }),
        await send('GET', '/openapi.json', { key: null }),
      ];
      expect(responses[2]?.status).toBe(204);
      const outside = await fetch(new URL('/docs', server().baseUrl));
      const unknownOutside = await fetch(new URL('/nope', server().baseUrl));
      const trpc = await fetch(new URL(`/trpc/contacts.list?input=${encodeURIComponent('{}')}`, server().baseUrl));
      const ids = [
        ...responses.map((r) => r.headers.get('x-request-id')),
        outside.headers.get('x-request-id'),
        unknownOutside.headers.get('x-request-id'),
        trpc.headers.get('x-request-id'),
      ];
      for (const id of ids) expect(id).toMatch(REQUEST_ID);
      expect(new Set(ids).size).toBe(ids.length);
      expect(unknownOutside.status).toBe(404);
      expect(unknownOutside.status).not.toBe(500);
    });

    it.each(['abc-123._X', 'a', 'x'.repeat(128), 'req_01J0000000000000000000000'])(
      'echoes a valid client id %s',
      async (id) => {
        for (const res of [
          await send('GET', '/contacts', { headers: { 'x-request-id': id } }),
          await send('POST', '/contacts', { body: {}, headers: { 'x-request-id': id } }),
          await send('GET', '/contacts', { key: null, headers: { 'x-request-id': id } }),
          await send('GET', '/nope', { headers: { 'x-request-id': id } }),
        ]) {
          expect(res.headers.get('x-request-id')).toBe(id);
        }
      },
    );

    it.each(['x'.repeat(129), 'has spaces in it', 'abc/def', 'ünïcode', 'a;b', 'id\tx'])(
      'replaces an invalid client id %j with a new one',
      async (id) => {
        const first = await send('GET', '/contacts', { headers: { 'x-request-id': id } });
        const second = await send('GET', '/contacts', { key: null, headers: { 'x-request-id': id } });
        for (const res of [first, second]) {
          const sent = res.headers.get('x-request-id');
          expect(sent).toMatch(REQUEST_ID);
          expect(sent).not.toBe(id);
        }
        expect(first.headers.get('x-request-id')).not.toBe(second.headers.get('x-request-id'));
      },
    );

    it('a malformed URL is 401 without a key, else 400 of the contract shape, with a request id', async () => {
      const path = '/contacts/%E0%A4%A';
      const noKey = await send('GET', path, { key: null, headers: { 'x-request-id': 'bad-url-1' } });
      expectExactError(noKey, 401, 'unauthorized');
      expect(noKey.headers.get('x-request-id')).toBe('bad-url-1');
      for (const key of [server().keys.full, server().keys.webhook]) {
        const res = await send('GET', path, { key });
        expectExactError(res, 400, 'bad_request');
        expect(res.headers.get('x-request-id')).toMatch(REQUEST_ID);
      }
    });

    it('an over-long path parameter is a 4xx of the contract shape, with a request id', async () => {
      const path = `/contacts/${'x'.repeat(5000)}`;
      expectExactError(await send('GET', path, { key: null }), 401, 'unauthorized');
      const res = await send('GET', path);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expectExactError(res, res.status, res.status === 400 ? 'bad_request' : 'not_found');
      expect(res.headers.get('x-request-id')).toMatch(REQUEST_ID);
    });
  });

  describe('GET /v1/openapi.json', () => {
    const expected = operations.map(([, op]) => `${op.method.toLowerCase()} /v1${toOpenApiPath(op.path)}`).sort();

    it('is served without a key as OpenAPI 3.1.0', async () => {
      for (const key of [null, 'wrong', server().keys.webhook]) {
        const res = await send('GET', '/openapi.json', { key });
        expect(res.status, res.text).toBe(200);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(res.body.openapi).toBe('3.1.0');
        expect(typeof res.body.info?.title).toBe('string');
      }
    });

    it('lists exactly the operations of the endpoint table', async () => {
      const doc = (await send('GET', '/openapi.json', { key: null })).body as {
        paths: Record<string, Record<string, { operationId?: string }>>;
      };
      const listed = Object.entries(doc.paths)
        .filter(([path]) => path.startsWith('/v1/'))
        .flatMap(([path, methods]) =>
          Object.keys(methods)
            .filter((m) => ['get', 'post', 'put', 'patch', 'delete', 'head', 'options', 'trace'].includes(m))
            .map((m) => `${m} ${path}`),
        )
        .sort();
      expect(listed).toEqual(expected);
      const ids = Object.values(doc.paths).flatMap((methods) => Object.values(methods).map((op) => op.operationId));
      expect(ids.sort()).toEqual([...operationIds, 'hooks.meta.receive', 'hooks.meta.verify'].sort());
    });

    it('every listed operation is served (not an unknown path)', async () => {
      const doc = (await send('GET', '/openapi.json', { key: null })).body as {
        paths: Record<string, Record<string, unknown>>;
      };
      for (const [path, methods] of Object.entries(doc.paths).filter(([documented]) => documented.startsWith('/v1/'))) {
        for (const method of Object.keys(methods)) {
          const concrete = path.replace(/^\/v1/, '').replace(/\{([A-Za-z_]+)\}/g, MISSING);
          // A webhook key is refused (403) by every real operation, while an unknown path is a 404.
          const res = await send(method.toUpperCase(), concrete, { key: server().keys.webhook });
          expectExactError(res, 403, 'forbidden');
          // With a full key it is not a 404 for the path (a 404 names the missing resource at most).
          const full = await send(method.toUpperCase(), concrete, {
            body: method === 'get' || method === 'delete' ? undefined : {},
          });
          if (full.status === 404) expect(full.body.error.message).not.toMatch(/path/i);
        }
      }
    });
  });

  describe('GET /docs', () => {
    it('is an HTML page without a key that renders the OpenAPI document with a script of this server', async () => {
      const res = await fetch(new URL('/docs', server().baseUrl));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await res.text();
      expect(html).toContain('/v1/openapi.json');
      const script = html.match(/<script src="(\/[^"]+)">/)?.[1];
      const bundle = await fetch(new URL(script ?? '/missing', server().baseUrl));
      expect(bundle.status).toBe(200);
      expect(bundle.headers.get('content-type')).toMatch(/^text\/javascript/);
    });
  });

  describe('the tRPC mount', () => {
    const url = () =>
      new URL(
        `/trpc/contacts.list?input=${encodeURIComponent(JSON.stringify({ query: { limit: 1 } }))}`,
        server().baseUrl,
      );

    it('answers a query with a valid key', async () => {
      expectBody(await send('POST', '/contacts', { body: { phone: phone() } }), 201, Contact);
      const res = await fetch(url(), { headers: { authorization: `Bearer ${server().keys.full}` } });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { result: { data: unknown } };
      const list = ContactList.parse(body.result.data);
      expect(list.limit).toBe(1);
      expect(list.offset).toBe(0);
      expect(list.data.length).toBe(1);
      expect(list.total).toBeGreaterThanOrEqual(1);
      expect(list.has_more).toBe(list.total > 1);
    });

    it('answers 401 without a key, with the contract error inside', async () => {
      const res = await fetch(url());
      expect(res.status).toBe(401);
      const body = (await res.json()) as { error: { data: { httpStatus: number; body: unknown; stack?: unknown } } };
      expect(body.error.data.httpStatus).toBe(401);
      expect(body.error.data.stack).toBeUndefined();
      expect(ErrorBody.parse(body.error.data.body).error.code).toBe('unauthorized');
    });

    it('answers 403 for a write with a read-only key and 400 for invalid input', async () => {
      const mutation = new URL('/trpc/contacts.create', server().baseUrl);
      const readOnly = await fetch(mutation, {
        method: 'POST',
        headers: { authorization: `Bearer ${server().keys.readOnly}`, 'content-type': 'application/json' },
        body: JSON.stringify({ body: { phone: phone() } }),
      });
      expect(readOnly.status).toBe(403);
      const invalid = await fetch(mutation, {
        method: 'POST',
        headers: { authorization: `Bearer ${server().keys.full}`, 'content-type': 'application/json' },
        body: JSON.stringify({ body: { phone: 'nope' } }),
      });
      expect(invalid.status).toBe(400);
      const body = (await invalid.json()) as { error: { data: { body: unknown } } };
      expect(ErrorBody.parse(body.error.data.body).error.details).toMatchObject({
        field: 'phone',
        constraint: 'format',
      });
    });
  });

  describe('error bodies', () => {
    it('are exactly {error: {code, message, details?}} for every kind of error', async () => {
      expectExactError(await send('GET', '/contacts', { key: null }), 401, 'unauthorized');
      expectExactError(await send('GET', '/contacts', { key: server().keys.webhook }), 403, 'forbidden');
      expectExactError(await send('GET', `/contacts/${MISSING}`), 404, 'not_found');
      expectExactError(await send('GET', '/nope'), 404, 'not_found');
      expectExactError(await send('POST', '/contacts', { body: { name: 'x' } }), 400, 'bad_request', {
        field: 'phone',
        constraint: 'required',
      });
      expectExactError(await send('GET', '/contacts', { query: { limit: 101 } }), 400, 'bad_request', {
        field: 'limit',
        constraint: 'max',
      });
    });
  });

  afterAll(() => {
    // Nothing in this file may have been answered with a 500.
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
  });
});
