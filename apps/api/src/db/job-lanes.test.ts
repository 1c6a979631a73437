import { Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { accountsService } from '../services/accounts.js';
import { createTestDatabase } from '../testing/databases.js';
import { ACTIVE_DIALECTS } from '../testing/harness.js';
import { openDatabase } from './database.js';
import { migrateToLatest, migrationProvider } from './migrate.js';

for (const dialect of ACTIVE_DIALECTS) {
  describe(`migration 0012, job lanes [${dialect}]`, () => {
    it("puts queued deliveries in their endpoint's lane and other jobs in their account's", async () => {
      const target = await createTestDatabase(dialect);
      const database = openDatabase(target.url);
      try {
        const migrator = new Migrator({ db: database.db, provider: migrationProvider });
        expect((await migrator.migrateTo('2026_11_25_0011_job_account_indexes')).error).toBeUndefined();
        const at = '2026-01-01T00:00:00.000Z';
        const { id: account } = await accountsService.createAccount({ database }, { name: 'Before', plan: 'free' });
        await sql`insert into events (account_id, id, type, conversation_id, sequence, data, created_at)
          values (${account}, 'evt_1', 'order.placed', null, null, '{}', ${at})`.execute(database.db);
        await sql`insert into webhook_endpoints (account_id, id, url, events, description, status, created_at, updated_at)
          values (${account}, 'we_1', 'https://example.com/hook', '["*"]', null, 'enabled', ${at}, ${at})`.execute(
          database.db,
        );
        await sql`insert into webhook_deliveries (account_id, id, endpoint_id, event_id, event_type, status, attempts, next_attempt_at, created_at, updated_at)
          values (${account}, 'wd_1', 'we_1', 'evt_1', 'order.placed', 'pending', '[]', ${at}, ${at}, ${at})`.execute(
          database.db,
        );
        const jobs: [string, string, string | null, string][] = [
          ['job_delivery', 'deliver_webhook', account, JSON.stringify({ deliveryId: 'wd_1' })],
          // A delivery of another account with the same id is not this job's.
          ['job_elsewhere', 'deliver_webhook', 'acct_2', JSON.stringify({ deliveryId: 'wd_1' })],
          ['job_run', 'run_workflow', account, JSON.stringify({ runId: 'wr_1' })],
          ['job_prune', 'prune_events', null, '{}'],
        ];
        for (const [id, kind, account, payload] of jobs) {
          await sql`insert into jobs (id, kind, account_id, payload, run_at, attempts, locked_by, locked_until, created_at)
            values (${id}, ${kind}, ${account}, ${payload}, ${at}, 0, null, null, ${at})`.execute(database.db);
        }
        await migrateToLatest(database.db);

        const lanes = await sql<{ id: string; lane: string }>`select id, lane from jobs order by id`.execute(
          database.db,
        );
        expect(lanes.rows).toEqual([
          { id: 'job_delivery', lane: 'endpoint:we_1' },
          { id: 'job_elsewhere', lane: 'account:acct_2' },
          { id: 'job_prune', lane: 'system' },
          { id: 'job_run', lane: `account:${account}` },
        ]);
      } finally {
        await database.destroy();
        await target.drop();
      }
    });
  });
}
