import type { FastifyInstance } from 'fastify';
import { type IncomingHttpHeaders, request as httpRequest } from 'node:http';
import { type Socket, connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { accountsService } from '../services/accounts.js';
import { type TestDatabase, createTestDatabase } from '../testing/databases.js';
import { testSettings } from '../testing/harness.js';
import { drainThenClose } from './drain.js';
import { buildServer } from './server.js';

/**
 * Shutdown (CONTRACT.md, Operations: Shutdown), in process: the drain takes the server out of a
 * balancer's rotation while it serves, and what arrives once it closes is refused in the
 * contract's terms. The whole sequence through a balancer is the fleet drill (resilience/fleet.test.ts).
 */

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** Parses one HTTP/1.1 answer with a Content-Length, as a socket received it. */
function parseAnswer(raw: string): RawAnswer {
  const [head = '', ...rest] = raw.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  const text = rest.join('\r\n\r\n');
  return { status: Number(statusLine.split(' ')[1]), headers, body: text ? JSON.parse(text) : undefined };
}

/** Everything the server sends on `socket` until it closes the connection. */
const readToEnd = (socket: Socket): Promise<string> =>
  new Promise((resolve, reject) => {
    let received = '';
    socket.on('data', (chunk) => {
      received += String(chunk);
    });
    socket.once('error', reject);
    socket.once('close', () => resolve(received));
  });

/** One request on a keep-alive agent's connection (node:http shows the Connection header fetch hides). */
function get(
  port: number,
  path: string,
  key?: string,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path, headers: key ? { authorization: `Bearer ${key}` } : {} },
      (res) => {
        let text = '';
        res.on('data', (chunk) => {
          text += String(chunk);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode as number,
            headers: res.headers,
            body: text ? JSON.parse(text) : undefined,
          }),
        );
      },
    );
    req.once('error', reject);
    req.end();
  });
}

describe('draining and closing the server', () => {
  let testDb: TestDatabase;
  let database: DatabaseHandle;
  let app: FastifyInstance;
  let port = 0;
  let key = '';
  /** The server's side of each connection, to know when it has read what a client sent. */
  const serverSockets: Socket[] = [];

  beforeEach(async () => {
    testDb = await createTestDatabase('sqlite');
    database = openDatabase(testDb.url);
    await migrateToLatest(database.db);
    const account = await accountsService.createAccount(
      { database },
      {
        name: 'Drain',
        plan: 'enterprise',
        rateLimitRpm: 1_000_000,
      },
    );
    key = (await accountsService.createKey({ database }, { accountId: account.id, type: 'full_access' })).key;
    app = await buildServer({ database, settings: testSettings(), logger: false });
    app.server.on('connection', (socket: Socket) => serverSockets.push(socket));
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  });
  afterEach(async () => {
    await app.close();
    await database.destroy();
    await testDb.drop();
    serverSockets.length = 0;
  });

  /** The server's side of each client connection sendPart opened. */
  const peers = new Map<Socket, Socket>();

  /** Sends `bytes` (on a new connection unless given one), resolving once the server has read them all. */
  async function sendPart(bytes: string, socket?: Socket): Promise<Socket> {
    let client = socket;
    if (!client) {
      const count = serverSockets.length;
      client = connect(port, '127.0.0.1');
      await vi.waitFor(() => expect(serverSockets.length).toBeGreaterThan(count), { timeout: 5_000, interval: 5 });
      peers.set(client, serverSockets[count] as Socket);
    }
    const peer = peers.get(client) as Socket;
    const before = peer.bytesRead;
    client.write(bytes);
    await vi.waitFor(() => expect(peer.bytesRead - before).toBe(Buffer.byteLength(bytes)), {
      timeout: 5_000,
      interval: 5,
    });
    return client;
  }

  it('answers /readyz 503 at once, keeps serving with Connection: close, then refuses what arrives late in the contract’s terms', async () => {
    const before = await get(port, '/readyz');
    expect(before.status).toBe(200);
    expect(before.headers.connection).toBe('keep-alive');

    app.beginDrain();
    const ready = await get(port, '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ status: 'unavailable', reason: 'shutting down' });
    // Still serving, and every answer tells keep-alive clients to reconnect (elsewhere).
    const served = await get(port, '/v1/contacts?limit=1', key);
    expect(served.status).toBe(200);
    expect(served.headers.connection).toBe('close');
    expect((await get(port, '/healthz')).headers.connection).toBe('close');

    // One request begun before the close (its body still coming), one whose headers are not all in.
    const body = JSON.stringify({ phone: '+14155550100' });
    const inFlight = await sendPart(
      `POST /v1/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    const inFlightAnswer = readToEnd(inFlight);
    const late = await sendPart(`GET /v1/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n`);
    const lateAnswer = readToEnd(late);
    const lateTrpc = await sendPart(`GET /trpc/contacts.list HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n`);
    const lateTrpcAnswer = readToEnd(lateTrpc);

    const closed = app.close();
    await vi.waitFor(() => expect(app.drain.closing).toBe(true), { timeout: 5_000, interval: 5 });
    // The listener is closed: a new connection is refused.
    await vi.waitFor(
      () =>
        new Promise<void>((resolve, reject) => {
          const probe = connect(port, '127.0.0.1');
          probe.once('connect', () => {
            probe.destroy();
            reject(new Error('still accepting'));
          });
          probe.once('error', () => resolve());
        }),
      { timeout: 5_000, interval: 10 },
    );

    await sendPart(`${body.slice(5)}`, inFlight);
    const finished = parseAnswer(await inFlightAnswer);
    expect(finished.status).toBe(201);
    expect(finished.body.phone).toBe('+14155550100');
    expect(finished.headers.connection).toBe('close');

    late.write('X-Request-Id: late-1\r\n\r\n');
    const refused = parseAnswer(await lateAnswer);
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({
      error: { code: 'server_error', message: expect.stringContaining('shutting down') },
    });
    expect(refused.headers['x-request-id']).toBe('late-1');
    expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers.connection).toBe('close');

    // On /trpc, the same refusal in tRPC's envelope, the contract's body inside.
    lateTrpc.write('\r\n');
    const refusedTrpc = parseAnswer(await lateTrpcAnswer);
    expect(refusedTrpc.status).toBe(503);
    expect(refusedTrpc.headers['x-request-id']).toMatch(/^req_/);
    expect(refusedTrpc.body.error.data).toMatchObject({ httpStatus: 503, body: { error: { code: 'server_error' } } });

    await closed;
    // The refused request was never run: only the one in flight wrote.
    expect((await database.db.selectFrom('contacts').select('phone').execute()).map((c) => c.phone)).toEqual([
      '+14155550100',
    ]);
  });

  it('cuts the connections of requests still in flight after the finishing time, and closes', async () => {
    const stuck = await sendPart(`GET /v1/contacts HTTP/1.1\r\nHost: x\r\n`);
    const ended = readToEnd(stuck);
    await drainThenClose(app, { drainMs: 0, finishMs: 200 });
    expect(await ended).toBe('');
    expect(app.server.listening).toBe(false);
  });
});
