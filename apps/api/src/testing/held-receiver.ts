import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A receiver on loopback for the crash tests: it holds the first request without an answer (the
 * worker is killed holding it) and answers every later one 200. Records each request's `webhook-id`.
 */
export async function startReceiverHoldingFirst() {
  const received: { id: string | undefined; hold: ServerResponse }[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    received.push({ id: request.headers['webhook-id'] as string | undefined, hold: response });
    if (received.length > 1) response.writeHead(200).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    received,
    url: (path: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    close: async () => {
      for (const r of received) r.hold.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
