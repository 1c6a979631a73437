import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { accountsService } from '../services/accounts.js';
import { contactsService } from '../services/contacts.js';
import type { ServiceContext } from '../services/context.js';
import { conversationsService } from '../services/conversations.js';
import { webhookEndpointsService } from '../services/webhooks.js';
import { ensureBuilt, spawnWorker as spawnBinWorker } from '../testing/built-bin.js';
import { type TestDatabase, createTestDatabase } from '../testing/databases.js';
import { startReceiverHoldingFirst } from '../testing/held-receiver.js';
import { ACTIVE_DIALECTS, testSettings } from '../testing/harness.js';

for (const dialect of ACTIVE_DIALECTS) {
  describe(`a worker killed mid-delivery [${dialect}]`, () => {
    let testDb: TestDatabase;
    let database: DatabaseHandle;
    let receiver: Awaited<ReturnType<typeof startReceiverHoldingFirst>>;
    const children: ChildProcess[] = [];

    const spawnWorker = () => {
      const child = spawnBinWorker(testDb.url);
      children.push(child);
      return child;
    };

    beforeAll(async () => {
      ensureBuilt();
      testDb = await createTestDatabase(dialect);
      database = openDatabase(testDb.url);
      await migrateToLatest(database.db);
      receiver = await startReceiverHoldingFirst();
    });
    afterAll(async () => {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      await receiver.close();
      await database.destroy();
      await testDb.drop();
    });

    it("loses nothing: another worker delivers once the dead one's claim expires", async () => {
      const account = await accountsService.createAccount({ database }, { name: 'Crash', plan: 'free' });
      await accountsService.createKey({ database }, { accountId: account.id, type: 'webhook' });
      const ctx: ServiceContext = { database, accountId: account.id, settings: testSettings() };
      const endpoint = await webhookEndpointsService.create(ctx, {
        url: receiver.url('/hook'),
        events: ['conversation.created'],
      });
      const contact = await contactsService.create(ctx, { phone: '+14155550142' });
      await conversationsService.create(ctx, { contact_id: contact.id, platform: 'whatsapp' });

      const first = spawnWorker();
      await vi.waitFor(() => expect(receiver.received, 'the first attempt to arrive').toHaveLength(1), {
        timeout: 20_000,
        interval: 50,
      });
      first.kill('SIGKILL');
      await new Promise((resolve) => first.once('exit', resolve));

      const second = spawnWorker();
      await vi
        .waitFor(
          async () => {
            const page = await webhookEndpointsService.listDeliveries(ctx, {
              endpointId: endpoint.id,
              query: { limit: 10, offset: 0 },
            });
            expect(page.data[0]?.status, 'the delivery to succeed').toBe('succeeded');
          },
          { timeout: 20_000, interval: 50 },
        )
        .catch(async (error) => {
          if (process.env.DEBUG_CRASH)
            console.log(
              await database.db.selectFrom('jobs').selectAll().execute(),
              await database.db.selectFrom('webhook_deliveries').selectAll().execute(),
            );
          throw error;
        });

      expect(receiver.received).toHaveLength(2);
      expect(receiver.received[1]?.id).toBe(receiver.received[0]?.id);
      const [delivery] = (
        await webhookEndpointsService.listDeliveries(ctx, { endpointId: endpoint.id, query: { limit: 10, offset: 0 } })
      ).data;
      expect(delivery?.attempts.at(-1)).toMatchObject({ status_code: 200, error: null });
      expect(delivery?.next_attempt_at).toBeNull();

      // SIGTERM stops the surviving worker gracefully.
      second.kill('SIGTERM');
      const code = await new Promise((resolve) => second.once('exit', resolve));
      expect(code).toBe(0);
    });
  });
}
