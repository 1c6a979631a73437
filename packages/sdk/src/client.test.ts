import { describe, expect, it } from 'vitest';
import { Convo } from './client.js';
import {
  BadRequestError,
  ConnectionError,
  ConvoError,
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
} from './errors.js';
import { SDK_METHODS } from './operations.js';
import { fakeFetch } from './fake-fetch.js';

const page = (data: unknown[], total: number, offset = 0, limit = 20) => ({
  data,
  total,
  limit,
  offset,
  has_more: offset + data.length < total,
});
const contact = {
  id: 'ct_1',
  name: 'Ana',
  phone: '+14155550123',
  email: null,
  tags: [],
  attributes: {},
  created_at: 'x',
  updated_at: 'x',
};

function client(replies: Parameters<typeof fakeFetch>[0], maxRetries = 2) {
  const fake = fakeFetch(replies);
  // No real waiting between retries in unit tests; the delays are recorded instead.
  const delays: number[] = [];
  const sleep = async (ms: number) => {
    delays.push(ms);
  };
  const convo = new Convo({
    apiKey: 'convo_sk_test',
    baseUrl: 'https://api.example.com/v1',
    fetch: fake.fetch,
    maxRetries,
    sleep,
  });
  return { convo, sent: fake.sent, delays };
}

describe('requests', () => {
  it('sends the exact method, path, query, headers and body of each operation', async () => {
    const { convo, sent } = client([
      { status: 200, body: page([], 0) },
      { status: 201, body: contact },
      { status: 200, body: contact },
      { status: 204 },
      { status: 200, body: contact },
    ]);
    await convo.conversations.list({ status: 'active', platform: 'whatsapp', search: 'ana', limit: 5 });
    await convo.contacts.create({ phone: '+14155550123', tags: ['vip'] });
    await convo.contacts.update('ct_1', { email: null });
    await convo.contacts.del('ct_1');
    await convo.contacts.tags.remove('ct_1', 'café vip/x');

    expect(sent.map((r) => `${r.method} ${r.url.pathname}${r.url.search}`)).toEqual([
      'GET /v1/conversations?status=active&platform=whatsapp&search=ana&limit=5',
      'POST /v1/contacts',
      'PATCH /v1/contacts/ct_1',
      'DELETE /v1/contacts/ct_1',
      'DELETE /v1/contacts/ct_1/tags/caf%C3%A9%20vip%2Fx',
    ]);
    expect(sent[0]?.headers).toMatchObject({ authorization: 'Bearer convo_sk_test', accept: 'application/json' });
    expect(sent[0]?.headers['content-type']).toBeUndefined();
    expect(sent[0]?.headers['idempotency-key']).toBeUndefined();
    expect(sent[1]?.headers['content-type']).toBe('application/json');
    expect(sent[1]?.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1]?.body).toEqual({ phone: '+14155550123', tags: ['vip'] });
    expect(sent[2]?.body).toEqual({ email: null });
    expect(sent[2]?.headers['idempotency-key']).toBeUndefined();
  });

  it('reads the key and base URL from the environment', async () => {
    process.env.CONVO_API_KEY = 'convo_sk_env';
    process.env.CONVO_BASE_URL = 'https://env.example.com/v1/';
    try {
      const fake = fakeFetch([{ status: 200, body: page([], 0) }]);
      await new Convo({ fetch: fake.fetch }).tags.list();
      expect(fake.sent[0]?.url.href).toBe('https://env.example.com/v1/tags');
      expect(fake.sent[0]?.headers.authorization).toBe('Bearer convo_sk_env');
    } finally {
      delete process.env.CONVO_API_KEY;
      delete process.env.CONVO_BASE_URL;
    }
    expect(() => new Convo({})).toThrow(/API key/);
  });

  it('reaches every operation of the endpoint table through a real method', () => {
    const { convo } = client([]);
    for (const [operationId, path] of Object.entries(SDK_METHODS)) {
      const method = path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], convo);
      expect(typeof method, operationId).toBe('function');
    }
  });
});

describe('retries', () => {
  it('retries 5xx and network errors with growing jittered delays, keeping the idempotency key', async () => {
    const { convo, sent, delays } = client([
      { status: 503 },
      new TypeError('fetch failed'),
      { status: 201, body: contact },
    ]);
    await expect(convo.contacts.create({ phone: '+14155550123' })).resolves.toMatchObject({ id: 'ct_1' });
    expect(sent).toHaveLength(3);
    const keys = new Set(sent.map((r) => r.headers['idempotency-key']));
    expect(keys.size).toBe(1);
    expect(delays).toHaveLength(2);
    expect(delays[0]).toBeGreaterThanOrEqual(250);
    expect(delays[0]).toBeLessThanOrEqual(500);
    expect(delays[1]).toBeGreaterThanOrEqual(500);
    expect(delays[1]).toBeLessThanOrEqual(1000);
  });

  it('honours Retry-After on 429', async () => {
    const { convo, delays } = client([
      { status: 429, body: { error: { code: 'rate_limited', message: 'slow down' } }, headers: { 'retry-after': '3' } },
      { status: 200, body: page([], 0) },
    ]);
    await convo.tags.list();
    expect(delays).toEqual([3000]);
  });

  it('tells onRetry of each retry before its wait: the error, the attempt to come and the delay', async () => {
    const fake = fakeFetch([
      { status: 429, body: { error: { code: 'rate_limited', message: 'slow down' } }, headers: { 'retry-after': '2' } },
      { status: 503 },
      { status: 201, body: contact },
    ]);
    const seen: string[] = [];
    const convo = new Convo({
      apiKey: 'convo_sk_test',
      baseUrl: 'https://api.example.com/v1',
      fetch: fake.fetch,
      maxRetries: 4,
      sleep: async (ms) => {
        seen.push(`sleep ${ms}`);
      },
      onRetry: ({ error, attempt, maxAttempts, delayMs, method, path }) =>
        seen.push(`${error.constructor.name} ${method} ${path}: attempt ${attempt} of ${maxAttempts} in ${delayMs}`),
    });
    await convo.contacts.create({ phone: '+14155550123' });
    expect(seen).toHaveLength(4);
    expect(seen.slice(0, 2)).toEqual(['RateLimitedError POST /v1/contacts: attempt 2 of 5 in 2000', 'sleep 2000']);
    expect(seen[2]).toMatch(/^ServerError POST \/v1\/contacts: attempt 3 of 5 in \d+/);
    // Not told when nothing is retried.
    const quiet: unknown[] = [];
    const once = new Convo({
      apiKey: 'convo_sk_test',
      fetch: fakeFetch([{ status: 404, body: { error: { code: 'not_found', message: 'no' } } }]).fetch,
      onRetry: (retry) => quiet.push(retry),
    });
    await expect(once.tags.list()).rejects.toBeInstanceOf(NotFoundError);
    expect(quiet).toEqual([]);
  });

  it('never retries other 4xx', async () => {
    const { convo, sent } = client([
      {
        status: 400,
        body: {
          error: {
            code: 'bad_request',
            message: 'phone is required',
            details: { field: 'phone', constraint: 'required' },
          },
        },
      },
    ]);
    const error = await convo.contacts.create({ phone: '' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({
      status: 400,
      code: 'bad_request',
      message: 'phone is required',
      details: { field: 'phone', constraint: 'required' },
      requestId: 'req_test',
    });
    expect(sent).toHaveLength(1);
  });

  it('gives up after maxRetries with the last error', async () => {
    const { convo, sent } = client(
      [{ status: 500, body: { error: { code: 'server_error', message: 'boom' } } }, { status: 502 }, { status: 500 }],
      2,
    );
    await expect(convo.tags.list()).rejects.toBeInstanceOf(ServerError);
    expect(sent).toHaveLength(3);
  });

  it('times out an attempt that gets no response', async () => {
    const hanging = (async (_url: unknown, init: RequestInit) =>
      new Promise((_resolve, reject) =>
        init.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError'))),
      )) as unknown as typeof fetch;
    const convo = new Convo({ apiKey: 'k', fetch: hanging, timeoutMs: 20, maxRetries: 0 });
    await expect(convo.tags.list()).rejects.toBeInstanceOf(TimeoutError);
  });
});

describe('errors', () => {
  it.each([
    [401, 'unauthorized', UnauthorizedError],
    [403, 'forbidden', ForbiddenError],
    [404, 'not_found', NotFoundError],
    [429, 'rate_limited', RateLimitedError],
    [500, 'server_error', ServerError],
  ] as const)('maps %i to its class', async (status, code, type) => {
    const { convo } = client(
      [{ status, body: { error: { code, message: code } }, headers: { 'retry-after': '120' } }],
      0,
    );
    const error = await convo.contacts.retrieve('ct_1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(type);
    expect(error).toBeInstanceOf(ConvoError);
    expect(error).toMatchObject({ status, code });
    if (error instanceof RateLimitedError) expect(error.retryAfter).toBe(120);
  });

  it('turns a failed connection into ConnectionError', async () => {
    const { convo } = client([new TypeError('fetch failed')], 0);
    await expect(convo.contacts.retrieve('ct_1')).rejects.toBeInstanceOf(ConnectionError);
  });
});

describe('pagination', () => {
  it('awaits one page, iterates every record across pages, and stops at toArray limits', async () => {
    const { convo, sent } = client([
      {
        status: 200,
        body: page(
          [
            { ...contact, id: 'a' },
            { ...contact, id: 'b' },
          ],
          5,
          0,
          2,
        ),
      },
      {
        status: 200,
        body: page(
          [
            { ...contact, id: 'c' },
            { ...contact, id: 'd' },
          ],
          5,
          2,
          2,
        ),
      },
      { status: 200, body: page([{ ...contact, id: 'e' }], 5, 4, 2) },
    ]);
    const list = convo.contacts.list({ limit: 2, tag: 'vip' });
    const first = await list;
    expect(first.data.map((c) => c.id)).toEqual(['a', 'b']);
    const ids: string[] = [];
    for await (const c of list) ids.push(c.id);
    expect(ids).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(sent.map((r) => r.url.search)).toEqual([
      '?limit=2&tag=vip',
      '?limit=2&tag=vip&offset=2',
      '?limit=2&tag=vip&offset=4',
    ]);
  });

  it('toArray stops fetching once it has enough', async () => {
    const { convo, sent } = client([
      {
        status: 200,
        body: page(
          [
            { ...contact, id: 'a' },
            { ...contact, id: 'b' },
          ],
          9,
          0,
          2,
        ),
      },
      {
        status: 200,
        body: page(
          [
            { ...contact, id: 'c' },
            { ...contact, id: 'd' },
          ],
          9,
          2,
          2,
        ),
      },
    ]);
    expect((await convo.contacts.list({ limit: 2 }).toArray({ limit: 3 })).map((c) => c.id)).toEqual(['a', 'b', 'c']);
    expect(sent).toHaveLength(2);
  });

  it('toArray without a limit collects every record; a limit that is no count is refused by name', async () => {
    const { convo, sent } = client([
      {
        status: 200,
        body: page(
          [
            { ...contact, id: 'a' },
            { ...contact, id: 'b' },
          ],
          3,
          0,
          2,
        ),
      },
      { status: 200, body: page([{ ...contact, id: 'c' }], 3, 2, 2) },
    ]);
    expect((await convo.contacts.list({ limit: 2 }).toArray()).map((c) => c.id)).toEqual(['a', 'b', 'c']);
    expect(sent).toHaveLength(2);
    for (const limit of [-1, 1.5, Number.NaN, '3' as unknown as number]) {
      await expect(convo.contacts.list().toArray({ limit })).rejects.toThrow(
        /^toArray: limit must be a whole number of records/,
      );
    }
  });
});
