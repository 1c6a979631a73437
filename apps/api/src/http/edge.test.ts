import { request as httpRequest } from 'node:http';
import { ErrorBody } from '@convo/core';
import { expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../edge/admission.js';
import { describeEachDialect } from '../testing/harness.js';

interface Streamed {
  status: number;
  body: string;
  /** Bytes of the body written before the answer came. */
  sentBeforeAnswer: number;
  /** The server closed the connection rather than read the rest. */
  closed: boolean;
}

/**
 * Sends `chunk` again and again (chunked, no Content-Length) until the server answers or
 * `maxBytes` have gone out: a server that reads the whole body before answering never answers
 * before the limit.
 */
function streamBody(
  url: URL,
  headers: Record<string, string>,
  opening: Buffer,
  chunk: Buffer,
  maxBytes: number,
): Promise<Streamed> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    let sentBeforeAnswer = 0;
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } });
    req.on('response', (res) => {
      answered = true;
      sentBeforeAnswer = sent;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (data: string) => (body += data));
      res.on('end', () => {
        const closed = res.headers.connection === 'close';
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body, sentBeforeAnswer, closed });
      });
    });
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    const pump = () => {
      while (!answered && sent < maxBytes) {
        const next = sent === 0 ? opening : chunk;
        sent += next.length;
        if (!req.write(next)) return void req.once('drain', pump);
      }
      if (!answered) req.end();
    };
    pump();
  });
}

/** How much a client may send in all before giving up on an answer. */
const LIMIT = 64 * MAX_BODY_BYTES;
/** An answer must come before this much was sent: the limit plus what the sockets' buffers hold. */
const CUT_OFF = 8 * MAX_BODY_BYTES;

describeEachDialect('the edge reads no more of a request than it must', (server) => {
  const transports = [
    ['REST', () => new URL(`${server().baseUrl}/contacts`)],
    ['tRPC', () => new URL('/trpc/contacts.create', server().baseUrl)],
  ] as const;

  for (const [transport, url] of transports) {
    it(`${transport}: a body over the limit is cut off while it is read, with a key (400 max_bytes)`, async () => {
      const filler = Buffer.from(`"${'x'.repeat(64 * 1024 - 3)}",`);
      const res = await streamBody(
        url(),
        { authorization: `Bearer ${server().keys.full}` },
        Buffer.from('{"body":['),
        filler,
        LIMIT,
      );
      expect(res.status).toBe(400);
      expect(res.sentBeforeAnswer).toBeLessThan(CUT_OFF);
      expect(res.closed).toBe(true);
      expect(res.body).toContain('max_bytes');
    });

    it(`${transport}: without a key the answer is 401 before the body is read`, async () => {
      const filler = Buffer.alloc(64 * 1024, 0x20);
      const res = await streamBody(url(), {}, Buffer.from('{'), filler, LIMIT);
      expect(res.status).toBe(401);
      expect(res.sentBeforeAnswer).toBeLessThan(CUT_OFF);
      expect(res.closed).toBe(true);
    });

    it(`${transport}: an over-deep body is refused while it is read, before it ends`, async () => {
      // Opening brackets only: the body never closes, so nothing could have parsed it whole.
      const res = await streamBody(
        url(),
        { authorization: `Bearer ${server().keys.full}` },
        Buffer.from('{"body":'),
        Buffer.from('['.repeat(1024)),
        LIMIT,
      );
      expect(res.status).toBe(400);
      expect(res.sentBeforeAnswer).toBeLessThan(CUT_OFF);
      expect(res.body).toContain('nests deeper');
    });
  }

  it('a GET that carries a body is answered without reading it', async () => {
    const url = new URL(`${server().baseUrl}/contacts`);
    const res = await new Promise<Streamed>((resolve, reject) => {
      let sent = 0;
      let answered = false;
      const req = httpRequest(url, {
        method: 'GET',
        headers: { authorization: `Bearer ${server().keys.full}`, 'transfer-encoding': 'chunked' },
      });
      req.on('response', (response) => {
        answered = true;
        const sentBeforeAnswer = sent;
        response.resume();
        response.on('end', () => {
          req.destroy();
          resolve({
            status: response.statusCode ?? 0,
            body: '',
            sentBeforeAnswer,
            closed: response.headers.connection === 'close',
          });
        });
      });
      req.on('error', (error) => {
        if (!answered) reject(error);
      });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = () => {
        while (!answered && sent < LIMIT) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        if (!answered) req.end();
      };
      pump();
    });
    expect(res.status).toBe(200);
    expect(res.sentBeforeAnswer).toBeLessThan(CUT_OFF);
    expect(res.closed).toBe(true);
  });

  it('tRPC: a client mistake is 400 with the contract body inside, and carries the rate-limit headers', async () => {
    const res = await fetch(new URL('/trpc/contacts.create', server().baseUrl), {
      method: 'POST',
      headers: { authorization: `Bearer ${server().keys.full}`, 'content-type': 'application/json' },
      body: JSON.stringify({ body: { phone: 'nope' } }),
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-ratelimit-limit')).not.toBeNull();
    expect(res.headers.get('x-ratelimit-remaining')).not.toBeNull();
    const body = (await res.json()) as { error: { data: { body: unknown; httpStatus: number } } };
    expect(body.error.data.httpStatus).toBe(400);
    expect(ErrorBody.parse(body.error.data.body).error.details).toMatchObject({ field: 'phone', constraint: 'format' });

    const malformed = await fetch(new URL('/trpc/contacts.create', server().baseUrl), {
      method: 'POST',
      headers: { authorization: `Bearer ${server().keys.full}`, 'content-type': 'application/json' },
      body: '{"body": ',
    });
    expect(malformed.status).toBe(400);
    const wrongType = await fetch(new URL('/trpc/contacts.create', server().baseUrl), {
      method: 'POST',
      headers: { authorization: `Bearer ${server().keys.full}`, 'content-type': 'text/plain' },
      body: 'hello',
    });
    expect(wrongType.status).toBe(400);
    expect(
      ErrorBody.parse(((await wrongType.json()) as { error: { data: { body: unknown } } }).error.data.body).error
        .details,
    ).toMatchObject({
      field: 'body',
      constraint: 'content_type',
    });
  });

  it('tRPC: the same key replays the same mutation (Idempotency-Key)', async () => {
    const call = () =>
      fetch(new URL('/trpc/contacts.create', server().baseUrl), {
        method: 'POST',
        headers: {
          authorization: `Bearer ${server().keys.full}`,
          'content-type': 'application/json',
          'idempotency-key': 'trpc-once',
        },
        body: JSON.stringify({ body: { phone: '+14155550199' } }),
      });
    const first = await call();
    const again = await call();
    expect(first.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(await first.text());
  });
});
