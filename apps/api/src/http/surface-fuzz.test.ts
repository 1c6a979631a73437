import { ErrorBody, operationIds } from '@convo/core';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { CSRF_HEADER } from '../console/plugin.js';
import { MAX_BODY_BYTES } from '../edge/admission.js';
import { recordEscapedErrors } from '../testing/escaped-errors.js';
import { type TestServer, describeEachDialect, testSettings } from '../testing/harness.js';
import { signMetaPayload } from '../testing/meta-payloads.js';

/*
 * Every route the server mounts, taken from the server's own route table (its onRoute hook), gets
 * the same hostile requests: broken bodies, broken paths, broken queries, with no key, a wrong key
 * and a valid one. No answer may be a 5xx, every refusal must be the contract's error body (inside
 * tRPC's envelope on tRPC routes), the process must keep answering, and nothing may escape as an
 * uncaught exception or unhandled rejection. A route added tomorrow is covered without being listed.
 */

/** Errors that escaped every handler while this file ran: in production, each ends the process. */
const escaped = recordEscapedErrors();

/** A console build of a page and an asset, so that the console's static routes are mounted and fuzzed too. */
const consoleDir = mkdtempSync(join(tmpdir(), 'convo-fuzz-console-'));
mkdirSync(join(consoleDir, 'assets'));
writeFileSync(join(consoleDir, 'index.html'), '<!doctype html><title>console</title>');
writeFileSync(join(consoleDir, 'assets', 'app.js'), 'export {};');
afterAll(() => rmSync(consoleDir, { recursive: true, force: true }));
const settings = testSettings({ consoleDir });

type Kind = 'v1' | 'trpc' | 'console-trpc' | 'meta' | 'other';
const kindOf = (url: string): Kind =>
  url.startsWith('/v1/')
    ? 'v1'
    : url.startsWith('/trpc/')
      ? 'trpc'
      : url.startsWith('/console/trpc/')
        ? 'console-trpc'
        : url.startsWith('/hooks/meta/')
          ? 'meta'
          : 'other';
const isTrpc = (url: string) => url.startsWith('/trpc/') || url.startsWith('/console/trpc/');

interface Sent {
  method: string;
  /** Sent as written: no normalisation of `..` or percent-encoding. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** What is being tried, for the failure message. */
  label: string;
  /** The statuses the OpenAPI document gives this route, when it documents it (outside /v1's own fuzz). */
  documented?: string[];
}

interface Answer {
  status: number;
  contentType: string | undefined;
  text: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 8 });
afterAll(() => agent.destroy());

/**
 * Sends one request as written. `reset` when the connection ended without an answer (allowed only
 * for a body over the limit, which the server may refuse and close without reading).
 */
function send(origin: URL, sent: Sent): Promise<Answer | 'reset'> {
  return new Promise((resolve, reject) => {
    const headers = { ...sent.headers, ...(sent.body ? { 'content-length': String(sent.body.length) } : {}) };
    const req = httpRequest({
      host: origin.hostname,
      port: origin.port,
      method: sent.method,
      path: sent.path,
      headers,
      agent,
    });
    let answered = false;
    req.setTimeout(15_000, () => req.destroy(new Error(`no answer within 15 s: ${sent.label}`)));
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        // An event stream does not end: its first frame is its answer.
        if (res.headers['content-type']?.startsWith('text/event-stream') && chunk.includes('\n\n')) res.destroy();
      });
      res.on('close', () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: res.headers['content-type'],
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: res.headers['content-type'],
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (answered) return;
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') resolve('reset');
      else reject(error);
    });
    req.end(sent.body);
  });
}

/**
 * Writes `bytes` on a connection of its own. When an answer is expected, resolves with all the
 * server wrote once it closed the connection; otherwise the client goes away at once, as a client
 * that crashes or loses its network would, and resolves when the socket is gone.
 */
function rawExchange(origin: URL, bytes: string, waitForAnswer: boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: origin.hostname, port: Number(origin.port) }, () => {
      socket.write(bytes);
      if (!waitForAnswer) socket.destroy();
    });
    let received = '';
    socket.setEncoding('utf8');
    socket.setTimeout(15_000, () =>
      socket.destroy(new Error(`no answer within 15 s to ${JSON.stringify(bytes.slice(0, 80))}`)),
    );
    socket.on('data', (text: string) => (received += text));
    socket.on('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ECONNRESET' || error.code === 'EPIPE' ? undefined : reject(error),
    );
    socket.on('close', () => resolve(received));
  });
}

/** Runs `work` over `items`, `width` at a time. */
async function pool<T>(items: T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

/** The contract's error body, and nothing else in it. */
function expectContractError(body: unknown, status: number, label: string): void {
  const parsed = ErrorBody.safeParse(body);
  expect(parsed.success, `${label}: not the contract's error body: ${JSON.stringify(body)?.slice(0, 300)}`).toBe(true);
  const error = (body as { error: Record<string, unknown> }).error;
  expect(Object.keys(body as object), label).toEqual(['error']);
  for (const key of Object.keys(error)) expect(['code', 'message', 'details'], label).toContain(key);
  const expected: Record<number, string> = {
    400: 'bad_request',
    401: 'unauthorized',
    403: 'forbidden',
    404: 'not_found',
    429: 'rate_limited',
  };
  if (expected[status]) expect(error.code, label).toBe(expected[status]);
}

/** Checks one answer: never a 5xx, every refusal in the contract's shape for its transport. */
function check(sent: Sent, answer: Answer | 'reset', tolerateReset: boolean): void {
  const label = `${sent.method} ${sent.path.slice(0, 120)} [${sent.label}]`;
  if (answer === 'reset') {
    expect(tolerateReset, `${label}: the connection ended without an answer`).toBe(true);
    return;
  }
  expect(answer.status, `${label}: ${answer.text.slice(0, 300)}`).toBeLessThan(500);
  if (sent.documented)
    expect(sent.documented, `${label}: ${answer.status} is not among the route's documented answers`).toContain(
      String(answer.status),
    );
  if (answer.status < 400 || sent.method === 'HEAD') return;
  expect(answer.contentType, label).toMatch(/^application\/json/);
  const body = JSON.parse(answer.text) as unknown;
  if (isTrpc(sent.path)) {
    // tRPC's envelope, with the HTTP status and the contract's body inside.
    const envelope = body as {
      error?: { message?: unknown; code?: unknown; data?: { httpStatus?: unknown; body?: unknown } };
    };
    expect(typeof envelope.error?.message, `${label}: ${answer.text.slice(0, 300)}`).toBe('string');
    expect(typeof envelope.error?.code, label).toBe('number');
    expect(envelope.error?.data?.httpStatus, label).toBe(answer.status);
    expectContractError(envelope.error?.data?.body, answer.status, label);
  } else {
    expectContractError(body, answer.status, label);
  }
}

const json = (text: string) => Buffer.from(text, 'utf8');

/** The app secret of the channel whose hook gets signed bodies. */
const APP_SECRET = 'surface-fuzz-app-secret';

/** `{"body":[[[…]]]}` nested `levels` deep. */
const deep = (levels: number) => json(`{"body":${'['.repeat(levels)}${']'.repeat(levels)}}`);

/**
 * Hostile bodies. `fields` is what goes inside the JSON object (tRPC takes it under `body`).
 * `oversized`: over the 1 MiB limit, which the server may refuse without reading.
 */
function bodyClasses(kind: Kind): { label: string; body: Buffer; contentType?: string; oversized?: boolean }[] {
  const wrap = (fields: string) =>
    json(kind === 'trpc' || kind === 'console-trpc' ? `{"body":{${fields}}}` : `{${fields}}`);
  return [
    { label: 'invalid JSON', body: json('{"name":') },
    { label: 'trailing garbage', body: json('{"name":"x"} {') },
    { label: 'nesting past the limit', body: deep(64) },
    { label: 'over 1 MiB', body: wrap(`"name":"${'x'.repeat(MAX_BODY_BYTES + 16)}"`), oversized: true },
    { label: 'text/plain', body: wrap('"name":"x"'), contentType: 'text/plain' },
    { label: 'no Content-Type', body: wrap('"name":"x"'), contentType: '' },
    { label: 'form Content-Type', body: json('name=x&phone=%00'), contentType: 'application/x-www-form-urlencoded' },
    {
      label: 'multipart Content-Type',
      body: json('--b\r\nContent-Disposition: form-data; name="x"\r\n\r\ny\r\n--b--'),
      contentType: 'multipart/form-data; boundary=b',
    },
    { label: 'invalid UTF-8', body: Buffer.concat([json('{"name":"'), Buffer.from([0xff, 0xfe, 0xc3]), json('"}')]) },
    { label: 'escaped NUL', body: wrap('"name":"a\\u0000b","phone":"\\u0000","url":"http://x/\\u0000"') },
    { label: 'raw NUL', body: Buffer.concat([json('{"name":"a'), Buffer.from([0]), json('b"}')]) },
    { label: 'lone surrogates', body: wrap('"name":"\\ud800","content":"x\\udfff","phone":"\\udc00\\ud800"') },
    {
      label: 'huge numbers',
      body: wrap('"name":1e400,"limit":123456789012345678901234567890,"amount":-1e309,"seconds":1e-400'),
    },
    { label: 'long strings', body: wrap(`"name":"${'é'.repeat(20_000)}","phone":"${'9'.repeat(10_000)}"`) },
    { label: 'duplicate keys', body: wrap('"name":"a","name":{"x":1},"status":"active","status":"archived"') },
    {
      label: '__proto__ and constructor',
      body: wrap('"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}},"attributes":{"__proto__":{"y":2}}'),
    },
    { label: 'wrong JSON types', body: json('[1,2,3]') },
    { label: 'null body', body: json('null') },
    { label: 'empty body', body: Buffer.alloc(0) },
  ];
}

/** Hostile values for a path parameter, percent-encoded as sent. */
const PARAM_VALUES = [
  'x_nope',
  '%00',
  'ct_%00x',
  '%zz',
  '%',
  '%ED%A0%80',
  '%FF%FE',
  '%C0%AF',
  '..',
  '..%2F..%2F..%2Fetc%2Fpasswd',
  '%2e%2e%2f%2e%2e',
  '%252e%252e',
  '%E2%80%AE',
  '%F0%9F%98%80',
  'x'.repeat(4_000),
  '%20',
];

/** Hostile query strings; tRPC's GET takes its input here. */
const QUERIES = [
  '?limit=%00',
  '?limit=1e400',
  '?limit=123456789012345678901234567890',
  '?limit=1&limit=2',
  '?x=%zz',
  '?status=%ED%A0%80',
  `?search=${'a'.repeat(6_000)}`,
  '?__proto__=1&constructor=2',
  `?input=${encodeURIComponent('{"body":')}`,
  `?input=${encodeURIComponent(`{"query":${'['.repeat(64)}${']'.repeat(64)}}`)}`,
  `?input=${encodeURIComponent('{"query":{"limit":"\\u0000"},"params":{"id":"\\ud800"}}')}`,
];

/** Paths no route serves: the 404 handler and the URL parser must answer them in the contract's shape too. */
const UNKNOWN_PATHS = [
  '/',
  '/nope',
  '/v1',
  '/v1/',
  '/v1/nope',
  '/v2/contacts',
  '/hooks',
  '/hooks/meta',
  '/hooks/meta/',
  '/trpc',
  '/console/trpc',
  '/%2e%2e/%2e%2e/etc/passwd',
  '/../../etc/passwd',
  '/docs/..%2f..%2fetc',
  '/healthz/../readyz',
  '/v1/%zz',
  '/v1/contacts%00',
  '//v1//contacts',
];

/** The procedure a tRPC route is called with: a real one, so that the body reaches its validation. */
const procedureFor = (method: string) => (method === 'GET' || method === 'HEAD' ? 'contacts.list' : 'contacts.create');

/** The route's URL with every parameter (and wildcard) filled by `value`. */
const fill = (url: string, value: string) => url.replace(/:[A-Za-z_]+/g, value).replace(/\*$/, value);

describeEachDialect(
  'every route the server mounts survives hostile requests',
  (server) => {
    /** The route table, from the server: one entry per method and URL. */
    const routesOf = (s: TestServer) => {
      const seen = new Set<string>();
      return s.routes.filter(({ method, url }) => {
        const key = `${method} ${url}`;
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      });
    };

    it('takes its routes from the server: every transport and edge route is among them', () => {
      const urls = new Set(server().routes.map((route) => route.url));
      for (const url of [
        '/v1/contacts',
        '/v1/contacts/:id',
        '/trpc/:path',
        '/console/trpc/:path',
        '/hooks/meta/:channel_id',
        '/docs',
        '/healthz',
        '/readyz',
      ])
        expect(urls, url).toContain(url);
      const meta = server()
        .routes.filter((route) => route.url === '/hooks/meta/:channel_id')
        .map((route) => route.method);
      expect(meta).toEqual(expect.arrayContaining(['GET', 'POST']));
      expect(operationIds).toEqual(expect.arrayContaining(['contacts.list', 'contacts.create']));
      expect([...urls].some((url) => url.startsWith('/console/') && !url.startsWith('/console/trpc/'))).toBe(true);
    });

    it('answers every route, with every kind of key, without a 5xx and in the contract shape', {
      timeout: 240_000,
    }, async () => {
      const s = server();
      const origin = new URL(s.baseUrl);
      const started = Date.now();
      let sentCount = 0;
      /** How often each status came: the refusals must really have been reached. */
      const statuses = new Map<string, number>();
      const wrongKey = `convo_sk_${'0'.repeat(40)}`;
      const publicOrigin = new URL(s.settings.publicUrl).origin;
      const opened = await s.request('POST', '/channels', {
        body: {
          platform: 'whatsapp',
          external_id: '106540352242922',
          access_token: 'EAAGfuzz',
          app_secret: APP_SECRET,
        },
      });
      expect(opened.status, opened.text).toBe(201);
      const channelId = opened.body.id as string;

      const keysFor = (kind: Kind, url: string): { label: string; key: string | null; full: boolean }[] => {
        const needsKey = (kind === 'v1' && url !== '/v1/openapi.json') || kind === 'trpc';
        if (!needsKey) return [{ label: 'no key', key: null, full: true }];
        return [
          { label: 'no key', key: null, full: false },
          { label: 'wrong key', key: wrongKey, full: false },
          { label: 'webhook key', key: s.keys.webhook, full: false },
          { label: 'valid key', key: s.keys.full, full: true },
        ];
      };

      // Routes outside /v1 that the document lists (Meta's hooks) must answer only what it says; /v1's
      // operations have the same check in testing/openapi-fuzz.ts.
      const document = (await (await fetch(new URL('/v1/openapi.json', origin))).json()) as {
        paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      };
      const documentedFor = (method: string, url: string, path: string): string[] | undefined => {
        if (kindOf(url) === 'v1' || method === 'HEAD') return undefined;
        const operation = document.paths[url.replace(/:([A-Za-z_]+)/g, '{$1}')]?.[method.toLowerCase()];
        const route = new RegExp(`^${url.replace(/:[A-Za-z_]+/g, '[^/?]+')}(\\?|$)`);
        return operation && route.test(path) ? Object.keys(operation.responses) : undefined;
      };
      let documentedChecks = 0;

      const bodyCache = new Map<Kind, ReturnType<typeof bodyClasses>>();
      const bodiesOf = (kind: Kind) => bodyCache.get(kind) ?? bodyCache.set(kind, bodyClasses(kind)).get(kind) ?? [];

      const batchFor = (method: string, url: string): { sent: Sent; tolerateReset: boolean }[] => {
        const kind = kindOf(url);
        const batch: { sent: Sent; tolerateReset: boolean }[] = [];
        const withDocumented = (sent: Sent): Sent => {
          const documented = documentedFor(method, url, sent.path);
          if (!documented) return sent;
          documentedChecks++;
          return { ...sent, documented };
        };
        const plainPath =
          kind === 'trpc' || kind === 'console-trpc' ? fill(url, procedureFor(method)) : fill(url, 'x_nope');
        const carriesBody = !['GET', 'HEAD', 'TRACE', 'OPTIONS'].includes(method);
        for (const { label: keyLabel, key, full } of keysFor(kind, url)) {
          const headers: Record<string, string> = {};
          if (key) headers.authorization = `Bearer ${key}`;
          // Past the console's cross-site check, so that its procedures' own refusals are reached.
          if (kind === 'console-trpc') Object.assign(headers, { origin: publicOrigin, [CSRF_HEADER]: '1' });
          const add = (path: string, label: string, extra: Partial<Sent> = {}, tolerateReset = false) =>
            batch.push({
              sent: withDocumented({
                method,
                path,
                headers: { ...headers, ...extra.headers },
                label: `${keyLabel}, ${label}`,
                ...(extra.body ? { body: extra.body } : {}),
              }),
              tolerateReset,
            });

          const bodies = bodiesOf(kind);
          // A key the edge refuses stops the request before its body is read: a few bodies show it.
          const refused = ['invalid JSON', 'nesting past the limit', ...(key === null ? ['over 1 MiB'] : [])];
          const chosenBodies = carriesBody
            ? full
              ? bodies
              : bodies.filter((b) => refused.includes(b.label))
            : bodies.slice(0, 1);
          for (const b of chosenBodies) {
            const type = b.contentType ?? 'application/json';
            add(
              plainPath,
              `body: ${b.label}`,
              { body: b.body, headers: type ? { 'content-type': type } : {} },
              b.oversized === true,
            );
          }
          const params = url.includes(':') || url.endsWith('*') ? (full ? PARAM_VALUES : PARAM_VALUES.slice(0, 3)) : [];
          for (const value of params) add(fill(url, value), `path: ${value.slice(0, 40)}`);
          // Traversal around the route's own path, and something after it.
          for (const suffix of full ? ['/../../healthz', '/%2e%2e/%2e%2e/readyz', '/x/%00', '%00'] : ['/%2e%2e'])
            add(`${plainPath}${suffix}`, `path suffix: ${suffix}`);
          if (!carriesBody || kind === 'trpc')
            for (const query of full ? QUERIES : QUERIES.slice(0, 1))
              add(`${plainPath}${query}`, `query: ${query.slice(0, 40)}`);
        }
        // Meta's hooks take no key: their credential is the signature, so a real channel gets every
        // body signed with its app secret (past the signature check, into parsing and storing).
        if (kind === 'meta') {
          const path = fill(url, channelId);
          const signed = (label: string, body: Buffer, contentType: string | undefined, tolerateReset = false) =>
            batch.push({
              sent: withDocumented({
                method,
                path,
                headers: {
                  'x-hub-signature-256': signMetaPayload(APP_SECRET, body),
                  ...(contentType ? { 'content-type': contentType } : {}),
                },
                body,
                label: `signed, ${label}`,
              }),
              tolerateReset,
            });
          if (carriesBody)
            for (const b of bodiesOf(kind))
              signed(`body: ${b.label}`, b.body, b.contentType ?? 'application/json', b.oversized === true);
          else
            for (const query of [
              '?hub.mode=subscribe&hub.verify_token=%00&hub.challenge=1',
              `?hub.mode=subscribe&hub.verify_token=x&hub.challenge=${'9'.repeat(6_000)}`,
              '?hub.mode=subscribe&hub.mode=subscribe&hub.verify_token=x',
              '?hub.challenge=%ED%A0%80&hub.mode=%zz',
            ])
              batch.push({
                sent: withDocumented({
                  method,
                  path: `${path}${query}`,
                  headers: {},
                  label: `real channel, query: ${query.slice(0, 40)}`,
                }),
                tolerateReset: false,
              });
        }
        return batch;
      };

      /** Sends a batch, checks each answer, then checks that the same process still answers. */
      const run = async (batch: { sent: Sent; tolerateReset: boolean }[]) => {
        const failures: string[] = [];
        await pool(batch, 6, async ({ sent, tolerateReset }) => {
          try {
            const answer = await send(origin, sent);
            const status = answer === 'reset' ? 'reset' : String(answer.status);
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
            check(sent, answer, tolerateReset);
          } catch (error) {
            failures.push(error instanceof Error ? (error.message.split('\n')[0] as string) : String(error));
          }
        });
        // Every failure of the batch at once, not only the first.
        expect(failures.slice(0, 40)).toEqual([]);
        sentCount += batch.length;
        const health = await fetch(new URL('/healthz', origin));
        expect(health.status).toBe(200);
        await health.arrayBuffer();
        expect(escaped, 'an error escaped every handler').toEqual([]);
      };

      const routes = routesOf(s);
      // One batch per kind of route (REST, tRPC, the console's tRPC, Meta's hooks, the rest), each followed by
      // /healthz.
      const batches = new Map<Kind, { sent: Sent; tolerateReset: boolean }[]>();
      for (const { method, url } of routes)
        batches.set(kindOf(url), [...(batches.get(kindOf(url)) ?? []), ...batchFor(method, url)]);
      expect([...batches.keys()].sort()).toEqual(['console-trpc', 'meta', 'other', 'trpc', 'v1']);
      for (const batch of batches.values()) await run(batch);

      // Unknown paths, with and without a key.
      const unknown: { sent: Sent; tolerateReset: boolean }[] = [];
      for (const path of UNKNOWN_PATHS)
        for (const method of ['GET', 'POST', 'DELETE', 'OPTIONS'])
          for (const key of [null, s.keys.full])
            unknown.push({
              sent: {
                method,
                path,
                headers: {
                  ...(key ? { authorization: `Bearer ${key}` } : {}),
                  ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
                },
                ...(method === 'POST' ? { body: json('{"name":') } : {}),
                label: `unknown path, ${key ? 'valid key' : 'no key'}`,
              },
              tolerateReset: false,
            });
      await run(unknown);

      // Broken HTTP and clients that go away, once for every route: the sockets' errors must all be handled.
      const rawFailures: string[] = [];
      const rawCases: { label: string; bytes: string; answered: boolean; method: string; path: string }[] = [];
      for (const { method, url } of routes) {
        const kind = kindOf(url);
        const path =
          kind === 'trpc' || kind === 'console-trpc'
            ? fill(url, procedureFor(method))
            : fill(url, kind === 'meta' ? channelId : 'x_nope');
        const head = `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.keys.full}\r\nContent-Type: application/json\r\n`;
        const cases: { label: string; bytes: string; answered: boolean }[] = [
          { label: 'gone mid-body', bytes: `${head}Content-Length: 1000\r\n\r\n{"name":"x`, answered: false },
          { label: 'gone mid-headers', bytes: `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthor`, answered: false },
          { label: 'gone after the request', bytes: `${head}Content-Length: 2\r\n\r\n{}`, answered: false },
          {
            label: 'malformed chunk',
            bytes: `${head}Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
            answered: true,
          },
          {
            label: 'Content-Length and chunked',
            bytes: `${head}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
            answered: true,
          },
          { label: 'NUL in a header', bytes: `${head}X-Evil: a\u0000b\r\nContent-Length: 2\r\n\r\n{}`, answered: true },
        ];
        rawCases.push(...cases.map((c) => ({ ...c, method, path })));
      }
      await pool(rawCases, 6, async ({ label, bytes, answered, method, path }) => {
        const answer = await rawExchange(origin, bytes, answered);
        if (answered) {
          const match = /^HTTP\/1\.1 (\d{3})[^\r]*\r\n[\s\S]*?\r\n\r\n([\s\S]*)$/.exec(answer);
          if (match?.[1] !== '400')
            rawFailures.push(`${method} ${path} [${label}]: ${answer.slice(0, 200) || 'no answer'}`);
          else {
            try {
              expectContractError(JSON.parse(match[2] as string), 400, label);
            } catch (error) {
              rawFailures.push(`${method} ${path} [${label}]: ${String(error).slice(0, 200)}`);
            }
          }
        }
      });
      sentCount += rawCases.length;
      expect(rawFailures.slice(0, 40)).toEqual([]);
      await run([]);

      // Nesting two million levels deep (4 MB, over the size limit too) once for every kind of route:
      // the body that used to end the process.
      const kinds = new Map<Kind, { method: string; url: string }>();
      for (const route of routes)
        if (route.method === 'POST' && !kinds.has(kindOf(route.url))) kinds.set(kindOf(route.url), route);
      const huge = deep(2_000_000);
      const deepBatch: { sent: Sent; tolerateReset: boolean }[] = [];
      for (const [kind, { url }] of kinds) {
        const path = kind === 'trpc' || kind === 'console-trpc' ? fill(url, 'contacts.create') : fill(url, 'x_nope');
        for (const key of [null, s.keys.full])
          deepBatch.push({
            sent: {
              method: 'POST',
              path,
              headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
              body: huge,
              label: `2M levels, ${kind}`,
            },
            tolerateReset: true,
          });
      }
      expect(kinds.size).toBeGreaterThanOrEqual(4);
      await run(deepBatch);

      // Bounded: the whole surface in a fixed number of requests and well under a minute.
      expect(sentCount).toBeLessThan(12_000);
      console.info(
        `surface fuzz [${s.dialect}]: ${sentCount} requests to ${routes.length} routes in ${Date.now() - started} ms`,
        Object.fromEntries(statuses),
      );
      for (const status of ['200', '400', '401', '403', '404'])
        expect(statuses.get(status) ?? 0, `answers ${status}`).toBeGreaterThan(0);
      expect(documentedChecks, 'answers held to the document outside /v1').toBeGreaterThan(50);
      expect(Date.now() - started).toBeLessThan(120_000);
    });
  },
  settings,
);
