import { ErrorBody } from '@convo/core';
import { type Socket, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTIVE_DIALECTS, type TestServer, startTestServer, testSettings } from '../testing/harness.js';

/** What a raw connection got before the server closed it. */
interface Closed {
  /** Everything the server wrote. */
  received: string;
  /** From the first byte written to the close. */
  elapsedMs: number;
}

/** Opens a raw connection to the server. */
function open(server: TestServer): Promise<Socket> {
  const { hostname, port } = new URL(server.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/**
 * Writes `parts` one after the other, `gapMs` apart (a client that trickles), and resolves when
 * the server closes the connection, with what it answered. A client error (a reset) ends it too.
 */
function trickle(socket: Socket, parts: string[], gapMs: number): Promise<Closed> {
  return new Promise((resolve) => {
    const started = Date.now();
    let received = '';
    let timer: NodeJS.Timeout | undefined;
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => (received += text));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ received, elapsedMs: Date.now() - started });
    });
    const next = (index: number) => {
      if (index >= parts.length || socket.destroyed) return;
      socket.write(parts[index] as string);
      // The gap is the subject, not a wait: a client this slow is what the server's timeouts cut off.
      timer = setTimeout(() => next(index + 1), gapMs);
    };
    next(0);
  });
}

/** The status and parsed body of the answer a raw connection got, if any. */
function answerOf(received: string): { status: number; body: unknown } | undefined {
  const match = /^HTTP\/1\.1 (\d{3})[^\r]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(received);
  if (!match) return undefined;
  return { status: Number(match[1]), body: match[3] ? JSON.parse(match[3] as string) : undefined };
}

/** A request cut off is answered 400 with the contract's body, and its connection closed. */
function expectCutOff(closed: Closed): void {
  const answer = answerOf(closed.received);
  expect(answer?.status, closed.received).toBe(400);
  expect(ErrorBody.parse(answer?.body).error.details).toMatchObject({ field: 'request', constraint: 'format' });
}

const HEADERS_MS = 300;
const REQUEST_MS = 800;
const KEEP_ALIVE_MS = 300;
/** The cut-off comes when the server next checks its connections: a little after the timeout. */
const SLACK_MS = 2_000;

for (const dialect of ACTIVE_DIALECTS) {
  describe(`slow clients are cut off by the configured timeouts [${dialect}]`, () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(
        dialect,
        testSettings({
          headersTimeoutMs: HEADERS_MS,
          requestTimeoutMs: REQUEST_MS,
          keepAliveTimeoutMs: KEEP_ALIVE_MS,
          idleTimeoutMs: 5_000,
        }),
      );
    });
    afterAll(async () => {
      await server?.close();
    });

    const requestHead = (length: number) =>
      `POST /v1/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.keys.full}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

    it('a body that stops short of its Content-Length is answered 400 or dropped once the request timeout passes', async () => {
      const closed = await trickle(await open(server), [`${requestHead(100)}{"phone":`], 0);
      expectCutOff(closed);
      expect(closed.elapsedMs).toBeGreaterThanOrEqual(REQUEST_MS - 50);
      expect(closed.elapsedMs).toBeLessThan(REQUEST_MS + SLACK_MS);
    });

    it('a body trickled a byte at a time is not served: cut off at the request timeout', async () => {
      const body = JSON.stringify({ phone: '+14155550142', name: 'Slow' });
      const closed = await trickle(await open(server), [requestHead(Buffer.byteLength(body)), ...body.split('')], 100);
      expectCutOff(closed);
      expect(answerOf(closed.received)?.status).not.toBe(201);
      expect(closed.elapsedMs).toBeLessThan(REQUEST_MS + SLACK_MS);
      const stored = await server.request('GET', '/contacts', { query: { search: 'Slow' } });
      expect(stored.body.total).toBe(0);
    });

    it('headers that trickle are cut off at the headers timeout', async () => {
      const lines = [
        'GET /healthz HTTP/1.1\r\n',
        'Host: x\r\n',
        ...Array.from({ length: 50 }, (_, i) => `X-Slow-${i}: y\r\n`),
      ];
      const closed = await trickle(await open(server), lines, 50);
      expectCutOff(closed);
      expect(closed.elapsedMs).toBeLessThan(HEADERS_MS + SLACK_MS);
    });

    it('an idle kept-alive connection is closed after the keep-alive timeout', async () => {
      const closed = await trickle(await open(server), ['GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'], 0);
      expect(answerOf(closed.received)?.status).toBe(200);
      expect(closed.elapsedMs).toBeGreaterThanOrEqual(KEEP_ALIVE_MS - 50);
      expect(closed.elapsedMs).toBeLessThan(KEEP_ALIVE_MS + SLACK_MS);
    });
  });

  describe(`a thousand idle connections do not stop others being served [${dialect}]`, () => {
    let server: TestServer;
    const idle: Socket[] = [];
    beforeAll(async () => {
      // The default timeouts: the idle connections stay open for the whole test.
      server = await startTestServer(dialect);
    });
    afterAll(async () => {
      for (const socket of idle) socket.destroy();
      await server?.close();
    });

    it('holds 1,000 connections open, half of them mid-request, and still answers', async () => {
      for (let i = 0; i < 1_000; i += 100) {
        const batch = await Promise.all(Array.from({ length: 100 }, () => open(server)));
        for (const [j, socket] of batch.entries()) {
          socket.on('error', () => {});
          // Half send nothing, half start a request and stop in its headers.
          if (j % 2 === 1) socket.write('POST /v1/contacts HTTP/1.1\r\nHost: x\r\n');
          idle.push(socket);
        }
      }
      const health = await fetch(`${new URL(server.baseUrl).origin}/healthz`);
      expect(health.status).toBe(200);
      const created = await server.request('POST', '/contacts', { body: { phone: '+14155550143' } });
      expect(created.status, created.text).toBe(201);
      const listed = await server.request('GET', '/contacts');
      expect(listed.status).toBe(200);
      expect(idle.filter((socket) => socket.destroyed)).toEqual([]);
    });
  });
}
