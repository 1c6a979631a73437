import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { buildServer } from './server.js';
import { accountsService } from '../services/accounts.js';
import { ACTIVE_DIALECTS, type TestServer, startTestServer, testSettings } from '../testing/harness.js';

/** Requests in flight at once: fewer than Node's listen backlog (511), which is not what is tested. */
const IN_FLIGHT = 128;

/**
 * `count` requests sent as fast as they go, IN_FLIGHT at a time, spread over the servers'
 * addresses in turn; their statuses. Each body is read, so its connection is free again.
 */
async function burst(baseUrls: string[], key: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  const send = async () => {
    while (next < count) {
      const i = next++;
      const response = await fetch(`${baseUrls[i % baseUrls.length]}/contacts?limit=1`, {
        headers: { authorization: `Bearer ${key}` },
      });
      await response.arrayBuffer();
      statuses[i] = response.status;
    }
  };
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, count) }, send));
  return statuses;
}

const tally = (statuses: number[]) => {
  const counts: Record<number, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
};

for (const dialect of ACTIVE_DIALECTS) {
  describe(`a burst on a fresh minute [${dialect}]`, () => {
    let server: TestServer;
    const others: { app: FastifyInstance; database: DatabaseHandle }[] = [];
    beforeAll(async () => {
      server = await startTestServer(dialect, testSettings());
    });
    afterAll(async () => {
      for (const other of others) {
        await other.app.close();
        await other.database.destroy();
      }
      await server.close();
    });

    const freshKey = async (plan: 'free' | 'business') => {
      const account = await accountsService.createAccount(
        { database: server.database },
        { name: `Burst ${plan}`, plan },
      );
      return (
        await accountsService.createKey({ database: server.database }, { accountId: account.id, type: 'full_access' })
      ).key;
    };

    it('serves every request of a burst up to the limit, and refuses the rest', async () => {
      const key = await freshKey('business');
      const statuses = await burst([server.baseUrl], key, 650);
      expect(tally(statuses)).toEqual({ 200: 600, 429: 50 });
    });

    it('holds across two instances sharing the database: the account gets its limit, not twice it', async () => {
      if (!server.database.sharedAcrossProcesses) return;
      const database = openDatabase(server.databaseUrl);
      const app = await buildServer({ database, settings: server.settings, logger: false });
      others.push({ app, database });
      await app.listen({ port: 0, host: '127.0.0.1' });
      const address = app.server.address();
      if (!address || typeof address === 'string') throw new Error('no address');
      const second = `http://127.0.0.1:${address.port}/v1`;

      const key = await freshKey('free');
      const statuses = await burst([server.baseUrl, second], key, 60);
      expect(tally(statuses)).toEqual({ 200: 60 });
      expect(tally(await burst([second, server.baseUrl], key, 4))).toEqual({ 429: 4 });
    });
  });
}
