import { connect } from 'node:net';
import { expect, it, vi } from 'vitest';
import { requestsInFlight } from './crash-policy.js';
import { describeEachDialect } from './testing/harness.js';

describeEachDialect('the requests a crash would name', (server) => {
  it('are forgotten once answered or abandoned, so the record of them never grows', async () => {
    const origin = new URL(server().baseUrl);
    await Promise.all(Array.from({ length: 20 }, (_, n) => server().request('GET', n % 2 ? '/contacts' : '/nope')));
    // A client that goes away mid-body: its request is never answered.
    await new Promise<void>((resolve) => {
      const socket = connect({ host: origin.hostname, port: Number(origin.port) }, () => {
        socket.write(
          `POST /v1/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server().keys.full}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na`,
        );
        // Once the server has started on it (it reads the headers at once), the client vanishes.
        setImmediate(() => socket.destroy());
      });
      socket.on('close', () => resolve());
    });
    await vi.waitFor(() => expect([...requestsInFlight]).toEqual([]), { timeout: 5_000 });
  });
});
