import type { ChildProcess } from 'node:child_process';
import { CreateWorkflowBody } from '@convo/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { accountsService } from '../services/accounts.js';
import { contactsService } from '../services/contacts.js';
import type { ServiceContext } from '../services/context.js';
import { workflowsService } from '../services/workflows.js';
import { ensureBuilt, spawnWorker as spawnBinWorker } from '../testing/built-bin.js';
import { type TestDatabase, createTestDatabase } from '../testing/databases.js';
import { startReceiverHoldingFirst } from '../testing/held-receiver.js';
import { ACTIVE_DIALECTS, testSettings } from '../testing/harness.js';
import { parseWith } from '../validation.js';

const CONTACTS = 20;

for (const dialect of ACTIVE_DIALECTS) {
  describe(`event-triggered runs across a worker killed mid-run [${dialect}]`, () => {
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

    it('starts one run per event and does each step of it once, the interrupted request again', async () => {
      const account = await accountsService.createAccount(
        { database },
        {
          name: 'Crash',
          plan: 'enterprise',
          rateLimitRpm: 1_000_000,
        },
      );
      const ctx: ServiceContext = { database, accountId: account.id, settings: testSettings() };
      const workflow = await workflowsService.create(
        ctx,
        parseWith(CreateWorkflowBody, {
          name: 'On every new contact',
          trigger: { event: 'contact.created' },
          steps: [
            { type: 'add_tag', tag: 'first' },
            { type: 'http_request', url: receiver.url('/step') },
            { type: 'add_tag', tag: 'second' },
          ],
        }),
      );

      const first = spawnWorker();
      const contacts = [];
      for (let i = 0; i < CONTACTS; i++)
        contacts.push(await contactsService.create(ctx, { phone: `+1415555${String(1000 + i)}` }));
      await vi.waitFor(
        () => expect(receiver.received.length, 'the first request to arrive').toBeGreaterThanOrEqual(1),
        { timeout: 20_000, interval: 20 },
      );
      first.kill('SIGKILL');
      await new Promise((resolve) => first.once('exit', resolve));

      const second = spawnWorker();
      await vi.waitFor(
        async () => {
          const runs = await workflowsService.listRuns(ctx, {
            workflowId: workflow.id,
            query: { limit: 100, offset: 0 },
          });
          expect(runs.data.map((run) => run.status)).toEqual(Array(CONTACTS).fill('succeeded'));
        },
        { timeout: 60_000, interval: 100 },
      );
      second.kill('SIGTERM');
      await new Promise((resolve) => second.once('exit', resolve));

      const runs = (await workflowsService.listRuns(ctx, { workflowId: workflow.id, query: { limit: 100, offset: 0 } }))
        .data;
      // One run per contact.created event, each for that event's contact.
      const events = await database.db
        .selectFrom('events')
        .select(['id', 'data'])
        .where('account_id', '=', account.id)
        .where('type', '=', 'contact.created')
        .execute();
      expect(events).toHaveLength(CONTACTS);
      expect(new Set(runs.map((run) => run.event_id))).toEqual(new Set(events.map((event) => event.id)));
      expect(new Set(runs.map((run) => run.contact_id))).toEqual(new Set(contacts.map((contact) => contact.id)));
      // Each tag step took effect once: a repeated add_tag would fail the run (or add nothing),
      // so count the contact.updated events the steps emitted, two per run.
      const updates = await database.db
        .selectFrom('events')
        .select('id')
        .where('account_id', '=', account.id)
        .where('type', '=', 'contact.updated')
        .execute();
      expect(updates).toHaveLength(CONTACTS * 2);
      for (const contact of contacts)
        expect((await contactsService.retrieve(ctx, contact.id)).tags).toEqual(['first', 'second']);
      const succeeded = await database.db
        .selectFrom('events')
        .select('id')
        .where('account_id', '=', account.id)
        .where('type', '=', 'workflow_run.succeeded')
        .execute();
      expect(succeeded).toHaveLength(CONTACTS);
      // Every run's request arrived; the one the dead worker held came again, with the same id
      // (as may any other that was in flight when it died: at least once).
      const ids = receiver.received.map((r) => r.id);
      expect(new Set(ids)).toEqual(new Set(runs.map((run) => `${run.id}.1`)));
      expect(ids.filter((id) => id === ids[0]).length).toBeGreaterThanOrEqual(2);
    });
  });
}
