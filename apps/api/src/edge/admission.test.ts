import { request as httpRequest, maxHeaderSize } from 'node:http';
import { expect, it } from 'vitest';
import { type TestResponse, describeEachDialect, expectExactError } from '../testing/harness.js';

/** A request sent as written (fetch would normalise the path), its answer read as the harness does. */
function rawRequest(
  origin: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<TestResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${origin}${path}`, { method, headers, path, maxHeaderSize: 64 * 1024 });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        const answerHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers))
          if (typeof value === 'string') answerHeaders.set(name, value);
        resolve({
          status: res.statusCode ?? 0,
          headers: answerHeaders,
          text,
          body: text ? JSON.parse(text) : undefined,
        });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describeEachDialect('the edge refuses what no route can mean', (server) => {
  const origin = () => new URL(server().baseUrl).origin;
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

  it.each(['GET', 'POST'])(
    '%s /hooks/meta/%%00 without a key is 400 channel_id pattern, before the database sees it',
    async (method) => {
      for (const path of ['/hooks/meta/%00', '/hooks/meta/ch_%00x']) {
        const res = await rawRequest(
          origin(),
          method,
          path,
          method === 'POST' ? { 'content-type': 'application/json' } : {},
        );
        expectExactError(res, 400, 'bad_request', { field: 'channel_id', constraint: 'pattern' });
        expect(res.headers.get('x-request-id')).toMatch(/^req_/);
      }
    },
  );

  it('a NUL in a /v1 path parameter is 400 naming the parameter, after the key checks', async () => {
    expectExactError(await rawRequest(origin(), 'GET', '/v1/contacts/ct_%00'), 401, 'unauthorized');
    expectExactError(
      await rawRequest(origin(), 'GET', '/v1/contacts/ct_%00', bearer(server().keys.full)),
      400,
      'bad_request',
      {
        field: 'id',
        constraint: 'pattern',
      },
    );
    expectExactError(
      await rawRequest(origin(), 'DELETE', '/v1/contacts/%00', bearer(server().keys.full)),
      400,
      'bad_request',
      {
        field: 'id',
        constraint: 'pattern',
      },
    );
  });

  it('an unknown path holding a NUL is still a 404', async () => {
    expectExactError(await rawRequest(origin(), 'GET', '/v1/nope/%00', bearer(server().keys.full)), 404, 'not_found');
  });

  it('a path an empty parameter leaves unmatched is 404 with every valid key, whatever its type', async () => {
    for (const key of [server().keys.full, server().keys.readOnly, server().keys.webhook]) {
      for (const [method, path] of [
        ['GET', '/v1/contacts/'],
        ['DELETE', '/v1/webhook_endpoints/'],
        ['GET', '/v1/conversations//messages'],
      ] as const) {
        const res = await rawRequest(origin(), method, path, bearer(key));
        expectExactError(res, 404, 'not_found');
        // An authenticated answer, as the 404 of any unknown path: it carries the rate-limit headers.
        expect(res.headers.get('x-ratelimit-limit'), `${method} ${path}`).not.toBeNull();
      }
    }
  });

  it('malformed percent-encoding on /hooks/meta is the contract 400', async () => {
    for (const path of ['/hooks/meta/%zz', '/hooks/meta/%E0%A4', '/hooks/meta/%ED%A0%80']) {
      const res = await rawRequest(origin(), 'GET', path);
      expectExactError(res, 400, 'bad_request', { field: 'path', constraint: 'format' });
      expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    }
  });

  it('headers over the size limit on /hooks/meta are the contract 400', async () => {
    const res = await rawRequest(origin(), 'POST', '/hooks/meta/ch_x', {
      'content-type': 'application/json',
      'x-filler': 'a'.repeat(maxHeaderSize + 1),
    });
    expectExactError(res, 400, 'bad_request', { field: 'headers', constraint: 'max_bytes' });
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('a tRPC route called with a method tRPC cannot serve (TRACE) is 400 method inside the envelope, not a 500', async () => {
    for (const [path, headers] of [
      ['/trpc/contacts.create', bearer(server().keys.full)],
      ['/console/trpc/contacts.create', {}],
    ] as const) {
      const res = await rawRequest(origin(), 'TRACE', path, headers);
      expect(res.status, `${path}: ${res.text}`).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expectExactError({ ...res, body: res.body.error.data.body }, 400, 'bad_request', {
        field: 'method',
        constraint: 'enum',
      });
    }
  });

  it('a tRPC call without a JSON Content-Type is 400 content_type inside the envelope, not a 500', async () => {
    for (const [path, key] of [
      ['/trpc/contacts.create', server().keys.full],
      ['/trpc/nope', server().keys.full],
    ] as const) {
      const res = await fetch(`${origin()}${path}`, { method: 'POST', headers: bearer(key) });
      expect(res.status, path).toBe(400);
      const envelope = (await res.json()) as { error: { data: { body: unknown } } };
      expectExactError(
        { status: 400, headers: res.headers, text: '', body: envelope.error.data.body },
        400,
        'bad_request',
        {
          field: 'body',
          constraint: 'content_type',
        },
      );
    }
  });
});
