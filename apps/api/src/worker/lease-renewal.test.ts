import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { type TestDatabase, createTestDatabase } from '../testing/databases.js';
import { ACTIVE_DIALECTS } from '../testing/harness.js';
import { enqueue } from '../repositories/jobs.js';
import { type JobHandlers, Worker } from './worker.js';

/** Handlers whose run_workflow jobs wait until `gate` opens; the other kinds end at once. */
function gatedHandlers(started: string[], gate: Promise<void>, startedAt: number[] = []): JobHandlers {
  return {
    run_workflow: async (job) => {
      started.push(job.payload.runId);
      startedAt.push(Date.now());
      await gate;
    },
    deliver_webhook: async () => {},
    send_message: async () => {},
    process_channel_payload: async () => {},
    download_media: async () => {},
    prune_events: async () => ({ retryAt: new Date(Date.now() + 3_600_000).toISOString() }),
  };
}

// Long enough that a renewal every third of it survives a busy machine.
const LEASE_MS = 1_500;

for (const dialect of ACTIVE_DIALECTS) {
  describe(`job leases [${dialect}]`, () => {
    let testDb: TestDatabase;
    let database: DatabaseHandle;
    beforeAll(async () => {
      testDb = await createTestDatabase(dialect);
      database = openDatabase(testDb.url);
      await migrateToLatest(database.db);
    });
    afterAll(async () => {
      await database.destroy();
      await testDb.drop();
    });

    const leaseOf = async (id: string) => {
      const row = await database.db
        .selectFrom('jobs')
        .select(['locked_by', 'locked_until'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      return { by: row.locked_by, until: row.locked_until === null ? null : Date.parse(row.locked_until) };
    };

    it('are renewed while the job runs, so a job longer than its lease is never taken by another worker', async () => {
      const id = await enqueue(database.db, { kind: 'run_workflow', accountId: null, payload: { runId: 'long' } });
      let open = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const started: string[] = [];
      const holder = new Worker({
        database,
        handlers: gatedHandlers(started, gate),
        pollIntervalMs: 10,
        leaseMs: LEASE_MS,
      });
      const other = new Worker({
        database,
        handlers: gatedHandlers(started, Promise.resolve()),
        pollIntervalMs: 10,
        leaseMs: LEASE_MS,
      });
      await holder.start();
      try {
        await vi.waitFor(() => expect(started).toEqual(['long']), { timeout: 10_000, interval: 10 });
        const first = await leaseOf(id);
        expect(first.by).toBe(holder.id);
        // Past the first lease by more than a whole lease: without renewal the job would be free.
        await vi.waitFor(() => expect(Date.now()).toBeGreaterThan((first.until as number) + LEASE_MS), {
          timeout: 10_000,
          interval: 20,
        });
        const renewed = await leaseOf(id);
        expect(renewed.by).toBe(holder.id);
        expect(renewed.until as number).toBeGreaterThan(Date.now());
        expect(await other.runDue()).toBe(0);
        expect(started).toEqual(['long']);
      } finally {
        open();
        await holder.stop();
      }
      // Finished once, then out of the queue.
      expect(started).toEqual(['long']);
      expect(await database.db.selectFrom('jobs').select('id').where('id', '=', id).execute()).toEqual([]);
    });

    it('of a worker that stopped renewing run out within one lease, and another worker takes the job', async () => {
      const id = await enqueue(database.db, { kind: 'run_workflow', accountId: null, payload: { runId: 'orphan' } });
      const started: string[] = [];
      // A worker that dies after its claim: runDue claims and runs, and no renewal ever follows.
      const dead = new Worker({ database, handlers: gatedHandlers(started, new Promise(() => {})), leaseMs: LEASE_MS });
      void dead.runDue();
      await vi.waitFor(() => expect(started).toEqual(['orphan']), { timeout: 10_000, interval: 10 });
      const lease = await leaseOf(id);
      expect(lease.until as number).toBeLessThanOrEqual(Date.now() + LEASE_MS);

      const takenAt: number[] = [];
      const taker = new Worker({
        database,
        handlers: gatedHandlers(started, Promise.resolve(), takenAt),
        pollIntervalMs: 10,
        leaseMs: LEASE_MS,
      });
      await taker.start();
      try {
        await vi.waitFor(() => expect(started).toEqual(['orphan', 'orphan']), { timeout: 10_000, interval: 10 });
        // Not before the dead worker's lease ran out, and soon after.
        expect(takenAt[0]).toBeGreaterThanOrEqual(lease.until as number);
        expect(takenAt[0]).toBeLessThan((lease.until as number) + 3_000);
      } finally {
        await taker.stop();
      }
    });
  });
}
