import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Convo } from './client.js';
import type { Event } from './contract.js';
import {
  BadRequestError,
  ConnectionError,
  type ConvoError,
  RateLimitedError,
  ServerError,
  UnauthorizedError,
} from './errors.js';
import type { RetryEvent } from './request-sender.js';

/** A request the SSE server saw: its URL, its Last-Event-ID, and whether the client has closed it. */
interface Seen {
  url: URL;
  lastEventId: string | undefined;
  accept: string | undefined;
  closed: boolean;
}

type Handler = (request: IncomingMessage, response: ServerResponse, index: number) => void;

/** A small SSE server: `handle` answers each request, given its index (0 for the first). */
async function sseServer(handle: Handler, port = 0) {
  const seen: Seen[] = [];
  const server: Server = createServer((request, response) => {
    const entry: Seen = {
      url: new URL(request.url ?? '/', 'http://localhost'),
      lastEventId: request.headers['last-event-id'] as string | undefined,
      accept: request.headers.accept,
      closed: false,
    };
    seen.push(entry);
    response.on('close', () => {
      entry.closed = true;
    });
    handle(request, response, seen.length - 1);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  servers.push(close);
  return { seen, port: address.port, baseUrl: `http://127.0.0.1:${address.port}/v1`, close };
}

const servers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((close) => close()));
});

const open = (response: ServerResponse) => {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  response.write(': stream open\n\n');
};
const event = (n: number) =>
  `id: evt_${n}\nevent: message.received\ndata: ${JSON.stringify({ id: `evt_${n}`, type: 'message.received' })}\n\n`;

function client(baseUrl: string, options: { maxRetries?: number; timeoutMs?: number } = {}) {
  // The waits between reconnections are recorded, not waited.
  const delays: number[] = [];
  const retries: RetryEvent[] = [];
  const convo = new Convo({
    apiKey: 'convo_sk_test',
    baseUrl,
    sleep: async (ms) => {
      delays.push(ms);
    },
    onRetry: (retry) => retries.push(retry),
    ...options,
  });
  return { convo, delays, retries };
}

/** The ids of the first `count` events of `stream`, then stops iterating. */
async function take(stream: AsyncIterable<Event>, count: number): Promise<string[]> {
  const ids: string[] = [];
  for await (const received of stream) {
    ids.push(received.id);
    if (ids.length === count) break;
  }
  return ids;
}

describe('events.stream', () => {
  it('yields each event once, in order, across a drop mid-event and an ended stream, resuming from the last one', async () => {
    const sse = await sseServer((_request, response, index) => {
      open(response);
      if (index === 0) {
        // Two events, then half of the third, then the connection is gone.
        response.write(event(1) + event(2));
        response.write('id: evt_3\nevent: message.received\ndata: {"id":"evt_3"', () => response.socket?.destroy());
      } else if (index === 1) {
        // The server ends the stream itself, as a restarting one does.
        response.end(event(3) + event(4));
      } else response.write(event(5));
    });
    const { convo, retries } = client(sse.baseUrl);
    const ids = await take(
      convo.events.stream({ type: ['message.received', 'message.updated'], starting_after: 'evt_0' }),
      5,
    );
    expect(ids).toEqual(['evt_1', 'evt_2', 'evt_3', 'evt_4', 'evt_5']);
    expect(sse.seen.map((request) => request.lastEventId)).toEqual([undefined, 'evt_2', 'evt_4']);
    expect(sse.seen[0]?.url.pathname).toBe('/v1/events/stream');
    expect(sse.seen[0]?.url.searchParams.get('type')).toBe('message.received,message.updated');
    expect(sse.seen[0]?.url.searchParams.get('starting_after')).toBe('evt_0');
    expect(sse.seen[0]?.accept).toBe('text/event-stream');
    expect(retries.map((retry) => [retry.error.constructor, retry.maxAttempts])).toEqual([
      [ConnectionError, Number.POSITIVE_INFINITY],
      [ConnectionError, Number.POSITIVE_INFINITY],
    ]);
    // Breaking out of the loop closed the connection.
    await vi.waitFor(() => expect(sse.seen[2]?.closed).toBe(true));
  });

  it('outlasts a server restart: refused connections, then a 503, then the events after the last one', async () => {
    const first = await sseServer((_request, response) => {
      open(response);
      response.write(event(1));
    });
    let second: Awaited<ReturnType<typeof sseServer>> | undefined;
    const delays: number[] = [];
    const retries: RetryEvent[] = [];
    const convo = new Convo({
      apiKey: 'convo_sk_test',
      baseUrl: first.baseUrl,
      maxRetries: 0,
      onRetry: (retry) => retries.push(retry),
      // The server comes back on its port after the client has found it gone twice.
      sleep: async (ms) => {
        delays.push(ms);
        if (delays.length === 3)
          second = await sseServer((_request, response, index) => {
            if (index === 0) {
              response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
              response.end(JSON.stringify({ error: { code: 'server_error', message: 'starting' } }));
            } else {
              open(response);
              response.write(event(2) + event(3));
            }
          }, first.port);
      },
    });
    const ids: string[] = [];
    for await (const received of convo.events.stream()) {
      ids.push(received.id);
      if (ids.length === 1) await first.close();
      if (ids.length === 3) break;
    }
    expect(ids).toEqual(['evt_1', 'evt_2', 'evt_3']);
    expect(retries.map((retry) => retry.error.constructor)).toEqual([
      ConnectionError,
      ConnectionError,
      ConnectionError,
      ServerError,
    ]);
    // The backoff grows while the server stays away, jittered between half and all of 0.5 s, 1 s, 2 s.
    expect(delays[1]).toBeGreaterThanOrEqual(500);
    expect(delays[2]).toBeGreaterThanOrEqual(1000);
    expect(second?.seen.map((request) => request.lastEventId)).toEqual(['evt_1', 'evt_1']);
  });

  it('waits out a 429 for its Retry-After, and the wait a retry: field asks for', async () => {
    const sse = await sseServer((_request, response, index) => {
      if (index === 0) {
        response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3' });
        response.end(JSON.stringify({ error: { code: 'rate_limited', message: 'at most 5 streams' } }));
      } else if (index === 1) {
        open(response);
        response.end(`retry: 7000\n\n${event(1)}`);
      } else {
        open(response);
        response.write(event(2));
      }
    });
    const { convo, delays, retries } = client(sse.baseUrl);
    expect(await take(convo.events.stream(), 2)).toEqual(['evt_1', 'evt_2']);
    expect(retries[0]?.error).toBeInstanceOf(RateLimitedError);
    expect(delays).toEqual([3000, 7000]);
  });

  it('throws 4xx errors as the SDK error classes, and fails a first connection after maxRetries', async () => {
    const sse = await sseServer((request, response) => {
      const unauthorized = request.headers.authorization === 'Bearer convo_sk_wrong';
      response.writeHead(unauthorized ? 401 : 400, { 'content-type': 'application/json', 'x-request-id': 'req_1' });
      response.end(
        JSON.stringify(
          unauthorized
            ? { error: { code: 'unauthorized', message: 'Invalid API key' } }
            : {
                error: {
                  code: 'bad_request',
                  message: 'Unknown event type "nope"',
                  details: { field: 'type', constraint: 'enum' },
                },
              },
        ),
      );
    });
    const { convo } = client(sse.baseUrl);
    const bad = await take(convo.events.stream({ type: 'nope' }), 1).catch((error: unknown) => error);
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(bad).toMatchObject({ status: 400, requestId: 'req_1', details: { field: 'type', constraint: 'enum' } });
    const wrongKey = new Convo({ apiKey: 'convo_sk_wrong', baseUrl: sse.baseUrl });
    await expect(take(wrongKey.events.stream(), 1)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(sse.seen).toHaveLength(2);

    await sse.close();
    const { convo: refused, retries } = client(sse.baseUrl, { maxRetries: 1 });
    await expect(take(refused.events.stream(), 1)).rejects.toBeInstanceOf(ConnectionError);
    expect(retries).toHaveLength(1);
  });

  it('refuses an answer that is not an event stream', async () => {
    const sse = await sseServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end('<html></html>');
    });
    const error = (await take(client(sse.baseUrl).convo.events.stream(), 1).catch((e: unknown) => e)) as ConvoError;
    expect(error).toBeInstanceOf(ServerError);
    expect(error.message).toMatch(/not an event stream/);
  });

  it('ends the iteration and closes the connection when the signal aborts, even while waiting', async () => {
    const sse = await sseServer((_request, response) => {
      open(response);
      response.write(event(1));
    });
    const controller = new AbortController();
    const ids: string[] = [];
    const done = (async () => {
      for await (const received of client(sse.baseUrl).convo.events.stream({}, { signal: controller.signal }))
        ids.push(received.id);
    })();
    await vi.waitFor(() => expect(ids).toEqual(['evt_1']));
    controller.abort();
    await done;
    await vi.waitFor(() => expect(sse.seen[0]?.closed).toBe(true));
    expect(sse.seen).toHaveLength(1);
  });

  it('stops at once when the signal aborts during the wait before a reconnection', async () => {
    const sse = await sseServer((_request, response) => {
      open(response);
      // A long wait asked for, then the stream ends.
      response.end(`retry: 60000\n\n${event(1)}`);
    });
    const retries: RetryEvent[] = [];
    const convo = new Convo({ apiKey: 'convo_sk_test', baseUrl: sse.baseUrl, onRetry: (retry) => retries.push(retry) });
    const controller = new AbortController();
    const ids: string[] = [];
    const done = (async () => {
      for await (const received of convo.events.stream({}, { signal: controller.signal })) ids.push(received.id);
    })();
    await vi.waitFor(() => expect(retries.map((retry) => retry.delayMs)).toEqual([60_000]));
    controller.abort();
    await done;
    expect(ids).toEqual(['evt_1']);
    expect(sse.seen).toHaveLength(1);
  });

  it('reconnects when the server falls silent for longer than timeoutMs', async () => {
    const sse = await sseServer((_request, response, index) => {
      open(response);
      // The first connection sends one event and then nothing, not even keep-alives.
      response.write(event(index + 1));
    });
    const { convo, retries } = client(sse.baseUrl, { timeoutMs: 200 });
    expect(await take(convo.events.stream(), 2)).toEqual(['evt_1', 'evt_2']);
    expect(retries[0]?.error.code).toBe('timeout');
    expect(sse.seen[1]?.lastEventId).toBe('evt_1');
    expect(sse.seen[0]?.closed).toBe(true);
  });
});
