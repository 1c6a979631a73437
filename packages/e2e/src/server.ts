import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeGraphApi } from '@convo/api/testing';
import { accountsService, buildServer, defaultSettings, migrateToLatest, openDatabase, seedDemo } from '@convo/api';

/**
 * A real Convo server on a fresh SQLite file, with one account and keys of each type; with `demo`,
 * the account is `pnpm start`'s demo account and its data. It talks to a fake Graph API of its own
 * (`graph`: give it channels and templates).
 */
export async function startServer(options: { demo?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'convo-e2e-'));
  const graph = await startFakeGraphApi();
  const file = `file:${join(dir, 'convo.db')}`;
  let database = openDatabase(file);
  await migrateToLatest(database.db);
  // As in development: the sandbox is on and webhooks may point at this machine.
  const settings = defaultSettings({ sandboxEnabled: true, allowPrivateWebhooks: true, graphApiUrl: graph.url });
  const serve = async (port: number) => {
    const app = await buildServer({ database, logger: false, settings });
    await app.listen({ port, host: '127.0.0.1' });
    return app;
  };
  let app = await serve(0);
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  const account = options.demo
    ? (await seedDemo(database)).account
    : await accountsService.createAccount({ database }, { name: 'E2E', plan: 'business' });
  const key = async (type: 'full_access' | 'read_only' | 'webhook') =>
    (await accountsService.createKey({ database }, { accountId: account.id, type })).key;
  return {
    baseUrl: `http://127.0.0.1:${address.port}/v1`,
    accountId: account.id,
    keys: { full: await key('full_access'), readOnly: await key('read_only'), webhook: await key('webhook') },
    get database() {
      return database;
    },
    settings,
    graph,
    /** Stops the server and starts another on the same SQLite file and port, as a deploy does. */
    async restart() {
      await app.close();
      await database.destroy();
      database = openDatabase(file);
      app = await serve(address.port);
    },
    async close() {
      const closed = app.close();
      // The test's fetch may hold a connection it opened and never sent on, which Node does not count as
      // idle: the close would wait for its timeout. Nothing is in flight when a suite closes its server.
      app.server.closeAllConnections();
      await closed;
      await graph.close();
      await database.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
export type TestServer = Awaited<ReturnType<typeof startServer>>;

/** A port nothing listens on now: bound, read and released. */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
