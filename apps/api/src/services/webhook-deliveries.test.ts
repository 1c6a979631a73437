import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RESPONSE_BYTES, postWebhook } from './webhook-deliveries.js';

describe('postWebhook connections', () => {
  let server: Server;
  let base: string;
  let connections = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/large') res.writeHead(200).end(Buffer.alloc(MAX_RESPONSE_BYTES * 4));
        else if (req.url === '/fail') res.writeHead(500).end('no');
        else res.writeHead(200).end('ok');
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const post = (path: string) =>
    postWebhook({
      url: `${base}${path}`,
      body: '{}',
      headers: { 'content-type': 'application/json' },
      timeoutMs: 5_000,
      allowPrivate: true,
    });

  it('sends the next attempt to a receiver over the connection of the last one, when its answer was read in full', async () => {
    const before = connections;
    expect(await post('/ok')).toMatchObject({ statusCode: 200, error: null });
    expect(await post('/fail')).toMatchObject({ statusCode: 500, error: 'HTTP 500 Internal Server Error' });
    expect(await post('/ok')).toMatchObject({ statusCode: 200, error: null });
    expect(connections - before).toBe(1);
  });

  it('drops the connection of an answer too long to read, and opens a new one for the next attempt', async () => {
    expect(await post('/ok')).toMatchObject({ statusCode: 200 });
    const before = connections;
    expect(await post('/large')).toMatchObject({ statusCode: 200, error: null });
    expect(await post('/ok')).toMatchObject({ statusCode: 200, error: null });
    expect(connections - before).toBe(1);
  });
});
