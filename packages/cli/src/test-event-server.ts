import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request a test server saw: its URL and headers. */
export interface SeenRequest {
  url: URL;
  headers: IncomingMessage['headers'];
  body: string;
}

/**
 * A local HTTP server for tests, answering each request with `handle` (given its index, 0 for the
 * first, and its body read): an event stream, or a webhook handler.
 */
export async function testServer(
  handle: (request: SeenRequest, response: ServerResponse, index: number) => void | Promise<void>,
) {
  const seen: SeenRequest[] = [];
  const server: Server = createServer(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    const entry = { url: new URL(request.url ?? '/', 'http://localhost'), headers: request.headers, body };
    seen.push(entry);
    await handle(entry, response, seen.length - 1);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    seen,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The head of an event stream and its first comment, as the API sends them. */
export function openEventStream(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  response.write(': stream open\n\n');
}

/** An event as the API records it, and as one SSE block. */
export function testEvent(n: number, type = 'message.received') {
  const event = {
    id: `evt_${n}`,
    type,
    created_at: '2026-05-04T10:00:00.000Z',
    data: { id: `msg_${n}`, content: `Olá ${n}` },
  };
  return { event, block: `id: ${event.id}\nevent: ${type}\ndata: ${JSON.stringify(event)}\n\n` };
}

/** What the API answers a revoked key: it ends a command that follows the stream. */
export function unauthorized(response: ServerResponse): void {
  response.writeHead(401, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ error: { code: 'unauthorized', message: 'Invalid API key' } }));
}
