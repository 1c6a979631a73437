import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { sql } from 'kysely';
import {
  MAX_RUNNING_PER_ENDPOINT,
  claimStatement,
  endpointLane,
  enqueue,
  jobsRepository,
} from '../repositories/jobs.js';
import { ACTIVE_DIALECTS } from '../testing/harness.js';
import { type TestDatabase, createTestDatabase } from '../testing/databases.js';
import { type JobHandlers, Worker } from './worker.js';

/** Handlers that record which job ran where; only run_workflow jobs are used here. */
function recordingHandlers(runs: string[], delayMs = 5): JobHandlers {
  return {
    run_workflow: async (job) => {
      // The job's own work, not a wait for the worker: jobs that take time overlap in its slots.
      await new Promise((r) => setTimeout(r, delayMs));
      runs.push(job.payload.runId);
    },
    deliver_webhook: async () => {},
    send_message: async () => {},
    process_channel_payload: async () => {},
    download_media: async () => {},
    prune_events: async () => ({ retryAt: new Date(Date.now() + 3_600_000).toISOString() }),
  };
}

for (const dialect of ACTIVE_DIALECTS) {
  describe(`the worker [${dialect}]`, () => {
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

    it('runs each queued job once and removes it', async () => {
      const runs: string[] = [];
      for (let i = 0; i < 20; i++)
        await enqueue(database.db, { kind: 'run_workflow', accountId: null, payload: { runId: `a${i}` } });
      const worker = new Worker({ database, handlers: recordingHandlers(runs), pollIntervalMs: 10 });
      await worker.start();
      await vi.waitFor(() => expect(runs.length).toBeGreaterThanOrEqual(20), { timeout: 15_000 });
      await worker.stop();
      expect([...runs].sort()).toEqual(Array.from({ length: 20 }, (_, i) => `a${i}`).sort());
      expect(await database.db.selectFrom('jobs').select('id').where('kind', '=', 'run_workflow').execute()).toEqual(
        [],
      );
    });

    it('takes the jobs it finished out of the queue with its next claim, and never a job another worker holds', async () => {
      const runs: string[] = [];
      for (let i = 0; i < 5; i++)
        await enqueue(database.db, { kind: 'run_workflow', accountId: null, payload: { runId: `f${i}` } });
      const worker = new Worker({ database, handlers: recordingHandlers(runs), pollIntervalMs: 10 });
      await worker.start();
      try {
        await vi.waitFor(() => expect(runs).toHaveLength(5), { timeout: 15_000 });
        // Still running: the finished jobs went with a later claim, not with stop().
        await vi.waitFor(
          async () =>
            expect(
              await database.db.selectFrom('jobs').select('id').where('kind', '=', 'run_workflow').execute(),
            ).toEqual([]),
          {
            timeout: 15_000,
          },
        );
      } finally {
        await worker.stop();
      }
      await enqueue(database.db, { id: 'job_held', kind: 'run_workflow', accountId: null, payload: { runId: 'held' } });
      await jobsRepository.claim(database.db, database.capabilities, {
        workerId: 'w_other',
        limit: 1,
        now: new Date().toISOString(),
        leaseUntil: new Date(Date.now() + 60_000).toISOString(),
      });
      await jobsRepository.finish(database.db, database.capabilities, 'w_mine', ['job_held']);
      expect(await database.db.selectFrom('jobs').select('id').where('id', '=', 'job_held').execute()).toHaveLength(1);
      await database.db.deleteFrom('jobs').where('id', '=', 'job_held').execute();
    });

    it('leaves a job scheduled later until it is due', async () => {
      const runs: string[] = [];
      await enqueue(database.db, {
        kind: 'run_workflow',
        accountId: null,
        payload: { runId: 'later' },
        runAt: new Date(Date.now() + 400).toISOString(),
      });
      const worker = new Worker({ database, handlers: recordingHandlers(runs), pollIntervalMs: 10 });
      expect(await worker.runDue()).toBe(0);
      await vi.waitFor(async () => expect(await worker.runDue()).toBeGreaterThan(0), { timeout: 15_000 });
      expect(runs).toEqual(['later']);
    });

    it('takes over a job whose worker died once its lease expires', async () => {
      await enqueue(database.db, { kind: 'run_workflow', accountId: null, payload: { runId: 'orphan' } });
      const now = Date.now();
      // A worker claims it and dies without finishing.
      const claimed = await jobsRepository.claim(database.db, database.capabilities, {
        workerId: 'dead',
        limit: 10,
        now: new Date(now).toISOString(),
        leaseUntil: new Date(now + 300).toISOString(),
      });
      expect(claimed.map((j) => JSON.parse(j.payload).runId)).toContain('orphan');
      const runs: string[] = [];
      const survivor = new Worker({ database, handlers: recordingHandlers(runs), pollIntervalMs: 10 });
      expect(await survivor.runDue()).toBe(0);
      await vi.waitFor(async () => expect(await survivor.runDue()).toBeGreaterThan(0), { timeout: 15_000 });
      expect(runs).toEqual(['orphan']);
    });

    it('retries a job whose handler throws, later', async () => {
      let calls = 0;
      const handlers: JobHandlers = {
        ...recordingHandlers([]),
        run_workflow: async () => {
          calls++;
          if (calls === 1) throw new Error('transient');
        },
      };
      await enqueue(database.db, { kind: 'run_workflow', accountId: null, payload: { runId: 'flaky' } });
      const worker = new Worker({ database, handlers, pollIntervalMs: 10 });
      await worker.runDue();
      const job = await database.db
        .selectFrom('jobs')
        .selectAll()
        .where('kind', '=', 'run_workflow')
        .executeTakeFirstOrThrow();
      expect(job).toMatchObject({ attempts: 1, locked_by: null });
      expect(job.run_at > new Date().toISOString()).toBe(true);
      await database.db
        .updateTable('jobs')
        .set({ run_at: new Date(0).toISOString() })
        .where('id', '=', job.id)
        .execute();
      await worker.runDue();
      expect(calls).toBe(2);
      expect(await database.db.selectFrom('jobs').select('id').where('kind', '=', 'run_workflow').execute()).toEqual(
        [],
      );
    });

    it("takes turns between accounts: one account's flood never stands in front of another's job", async () => {
      const started: string[] = [];
      for (let i = 0; i < 300; i++)
        await enqueue(database.db, { kind: 'run_workflow', accountId: 'acct_flood', payload: { runId: `flood${i}` } });
      const handlers: JobHandlers = {
        ...recordingHandlers([]),
        run_workflow: async (job) => {
          started.push(job.payload.runId);
          // Slow jobs, the subject of the test: the flood holds the slots while the other account's job comes.
          await new Promise((resolve) => setTimeout(resolve, 20));
        },
      };
      const concurrency = 4;
      const worker = new Worker({ database, handlers, pollIntervalMs: 10, concurrency });
      await worker.start();
      try {
        await vi.waitFor(() => expect(started.length).toBeGreaterThanOrEqual(20), { timeout: 15_000 });
        await enqueue(database.db, { kind: 'run_workflow', accountId: 'acct_other', payload: { runId: 'other' } });
        // Counted once the job is in: the flood goes on starting while the insert waits its turn.
        const startedBefore = started.length;
        await vi.waitFor(() => expect(started).toContain('other'), { timeout: 15_000 });
        // The other account's job is in the worker's next claim: no more of the flood starts
        // before it than the worker's slots, which claims under way may fill.
        expect(started.indexOf('other') - startedBefore).toBeLessThanOrEqual(concurrency);
      } finally {
        await worker.stop();
        await database.db.deleteFrom('jobs').where('kind', '=', 'run_workflow').execute();
      }
    });

    it("keeps a share of a worker's slots for other accounts: a flood of jobs that do not end never holds them all", async () => {
      const started: string[] = [];
      let release = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      for (let i = 0; i < 50; i++)
        await enqueue(database.db, { kind: 'run_workflow', accountId: 'acct_stuck', payload: { runId: `stuck${i}` } });
      const handlers: JobHandlers = {
        ...recordingHandlers([]),
        run_workflow: async (job) => {
          started.push(job.payload.runId);
          if (job.payload.runId.startsWith('stuck')) await gate;
        },
      };
      const worker = new Worker({ database, handlers, pollIntervalMs: 10, concurrency: 8 });
      await worker.start();
      try {
        await vi.waitFor(() => expect(started.length).toBe(6), { timeout: 15_000 });
        await enqueue(database.db, { kind: 'run_workflow', accountId: 'acct_waiting', payload: { runId: 'waiting' } });
        // Not one of the flood's jobs has ended, and the other account's job starts all the same.
        await vi.waitFor(() => expect(started).toContain('waiting'), { timeout: 15_000 });
        expect(started.filter((id) => id.startsWith('stuck'))).toHaveLength(6);
      } finally {
        release();
        await worker.stop();
        await database.db.deleteFrom('jobs').where('kind', '=', 'run_workflow').execute();
      }
    });

    it("hands a batch handler each account's jobs of a claim together, and applies each job's outcome", async () => {
      for (const account of ['acct_batch_a', 'acct_batch_b']) {
        for (let i = 0; i < 3; i++) {
          await enqueue(database.db, {
            kind: 'process_channel_payload',
            accountId: account,
            payload: { payloadId: `${account}:${i}` },
          });
        }
      }
      const batches: string[][] = [];
      const handlers: JobHandlers = {
        ...recordingHandlers([]),
        process_channel_payload: {
          batch: async (jobs) => {
            batches.push(jobs.map((job) => job.payload.payloadId));
            // The second job of each account asks to run again later; the others are done.
            return jobs.map((job) =>
              job.payload.payloadId.endsWith(':1')
                ? { retryAt: new Date(Date.now() + 60_000).toISOString() }
                : undefined,
            );
          },
        },
      };
      const worker = new Worker({ database, handlers });
      expect(await worker.runDue()).toBe(6);
      expect(batches.map((batch) => [...batch].sort()).sort()).toEqual([
        ['acct_batch_a:0', 'acct_batch_a:1', 'acct_batch_a:2'],
        ['acct_batch_b:0', 'acct_batch_b:1', 'acct_batch_b:2'],
      ]);
      const left = await database.db
        .selectFrom('jobs')
        .select(['payload', 'locked_by'])
        .where('kind', '=', 'process_channel_payload')
        .orderBy('payload')
        .execute();
      expect(left).toEqual([
        { payload: JSON.stringify({ payloadId: 'acct_batch_a:1' }), locked_by: null },
        { payload: JSON.stringify({ payloadId: 'acct_batch_b:1' }), locked_by: null },
      ]);

      // A batch handler that throws fails each of its jobs: every one runs again after a backoff.
      await database.db
        .updateTable('jobs')
        .set({ run_at: new Date(0).toISOString() })
        .where('kind', '=', 'process_channel_payload')
        .execute();
      const failing = new Worker({
        database,
        handlers: {
          ...handlers,
          process_channel_payload: {
            batch: async () => {
              throw new Error('broken');
            },
          },
        },
      });
      expect(await failing.runDue()).toBe(2);
      const retried = await database.db
        .selectFrom('jobs')
        .select(['run_at', 'attempts'])
        .where('kind', '=', 'process_channel_payload')
        .execute();
      expect(retried).toHaveLength(2);
      for (const job of retried) {
        expect(job.attempts).toBe(2);
        expect(Date.parse(job.run_at)).toBeGreaterThan(Date.now());
      }
      await database.db.deleteFrom('jobs').where('kind', '=', 'process_channel_payload').execute();
    });

    it("takes turns between an account's lanes: its backlog never stands in front of its deliveries", async () => {
      for (let i = 0; i < 50; i++) {
        await enqueue(database.db, {
          kind: 'process_channel_payload',
          accountId: 'acct_backlog',
          payload: { payloadId: `payload${i}` },
        });
      }
      await enqueue(database.db, {
        kind: 'deliver_webhook',
        accountId: 'acct_backlog',
        payload: { deliveryId: 'later' },
        lane: endpointLane('we_backlog'),
      });
      const now = Date.now() + 1_000;
      const claimed = await jobsRepository.claim(database.db, database.capabilities, {
        workerId: 'w_lanes',
        limit: 4,
        now: new Date(now).toISOString(),
        leaseUntil: new Date(now + 60_000).toISOString(),
      });
      // The delivery, queued after all fifty payloads, is in the first claim, beside three of them.
      expect(claimed.map((job) => job.kind).sort()).toEqual([
        'deliver_webhook',
        'process_channel_payload',
        'process_channel_payload',
        'process_channel_payload',
      ]);
      await database.db.deleteFrom('jobs').where('account_id', '=', 'acct_backlog').execute();
    });

    it(`runs at most ${MAX_RUNNING_PER_ENDPOINT} deliveries to one endpoint at once, across claims and workers`, async () => {
      for (let i = 0; i < 30; i++) {
        await enqueue(database.db, {
          kind: 'deliver_webhook',
          accountId: 'acct_busy',
          payload: { deliveryId: `busy${i}` },
          lane: endpointLane('we_busy'),
        });
        await enqueue(database.db, {
          kind: 'deliver_webhook',
          accountId: 'acct_busy',
          payload: { deliveryId: `calm${i}` },
          lane: endpointLane('we_calm'),
        });
      }
      const now = Date.now();
      const claim = (workerId: string) =>
        jobsRepository.claim(database.db, database.capabilities, {
          workerId,
          limit: 100,
          now: new Date(now).toISOString(),
          leaseUntil: new Date(now + 60_000).toISOString(),
        });
      const lanes = async (workerId: string) => (await claim(workerId)).map((job) => job.lane).sort();
      const full = (id: string) => Array.from({ length: MAX_RUNNING_PER_ENDPOINT }, () => endpointLane(id));
      expect(await lanes('w1')).toEqual([...full('we_busy'), ...full('we_calm')]);
      expect(await lanes('w2')).toEqual([]);
      // One delivery ends: its endpoint has room for one more.
      const done = await database.db
        .selectFrom('jobs')
        .select('id')
        .where('lane', '=', endpointLane('we_busy'))
        .where('locked_by', '=', 'w1')
        .executeTakeFirstOrThrow();
      await jobsRepository.finish(database.db, database.capabilities, 'w1', [done.id]);
      expect(await lanes('w2')).toEqual([endpointLane('we_busy')]);
      await database.db.deleteFrom('jobs').where('kind', '=', 'deliver_webhook').execute();
    });

    if (dialect === 'postgres') {
      it('never gives one job to two workers sharing the database', async () => {
        const runs: string[] = [];
        const ids = Array.from({ length: 60 }, (_, i) => `shared${i}`);
        for (const runId of ids)
          await enqueue(database.db, { kind: 'run_workflow', accountId: null, payload: { runId } });
        // Two workers with their own connection pools, as two processes would have.
        const other = openDatabase(testDb.url);
        const workers = [database, other].map(
          (db) => new Worker({ database: db, handlers: recordingHandlers(runs, 3), pollIntervalMs: 5, concurrency: 4 }),
        );
        await Promise.all(workers.map((w) => w.start()));
        await vi.waitFor(() => expect(runs.length).toBeGreaterThanOrEqual(ids.length), { timeout: 15_000 });
        await Promise.all(workers.map((w) => w.stop()));
        await other.destroy();
        expect(runs).toHaveLength(ids.length);
        expect(new Set(runs).size).toBe(ids.length);
      });

      interface PlanNode {
        'Node Type': string;
        'Index Name'?: string;
        Alias?: string;
        'Index Cond'?: string;
        'Recheck Cond'?: string;
        Plans?: PlanNode[];
      }
      /**
       * How the claim reads each lane's due jobs (the scan of jobs on `lane = l.lane`, not the
       * count of its running ones): `ordered` when it walks jobs_lane_due_idx in order, else the
       * scan and what sorts its rows.
       */
      const laneReads = (explained: { 'QUERY PLAN': { Plan: PlanNode }[] }[]): string[] => {
        const reads: string[] = [];
        const visit = (node: PlanNode, parent: PlanNode | undefined) => {
          const condition = node['Index Cond'] ?? node['Recheck Cond'] ?? '';
          if (node.Alias !== undefined && node.Alias !== 'r' && condition.includes('lane = l.lane')) {
            const ordered =
              node['Node Type'] === 'Index Scan' &&
              node['Index Name'] === 'jobs_lane_due_idx' &&
              parent?.['Node Type'] !== 'Sort';
            reads.push(
              ordered ? 'ordered' : `${node['Node Type']} ${node['Index Name'] ?? ''} under ${parent?.['Node Type']}`,
            );
          }
          for (const child of node.Plans ?? []) visit(child, node);
        };
        const [plan] = explained.flatMap((row) => row['QUERY PLAN']);
        if (plan) visit(plan.Plan, undefined);
        return reads;
      };

      it('reads a lane in index order, up to its room, whether statistics are missing or older than its backlog', async () => {
        await sql`alter table jobs set (autovacuum_enabled = false)`.execute(database.db);
        // One clock for the jobs and the claim: queueing the backlogs may take longer than a job is overdue.
        const now = Date.now();
        const job = (lane: string, i: number) => ({
          id: `job_plan_${lane}_${i}`,
          kind: 'run_workflow',
          account_id: 'acct_plan',
          payload: '{}',
          run_at: new Date(now - 1_000).toISOString(),
          attempts: 0,
          locked_by: null,
          locked_until: null,
          created_at: new Date(now - 1_000).toISOString(),
          lane,
        });
        const queueBacklog = async () => {
          for (let chunk = 0; chunk < 5; chunk++) {
            await database.db
              .insertInto('jobs')
              .values(Array.from({ length: 1_000 }, (_, i) => job('account:acct_plan', chunk * 1_000 + i)))
              .execute();
          }
        };
        const input = {
          workerId: 'w_plan',
          limit: 16,
          now: new Date(now).toISOString(),
          leaseUntil: new Date(now + 60_000).toISOString(),
        };
        const planOf = async () =>
          laneReads((await claimStatement(database.db, database.capabilities, input).explain('json')) as never);
        try {
          // Nothing has analysed the table yet.
          await queueBacklog();
          expect(await planOf()).toEqual(['ordered']);
          // Statistics of a queue of one job per lane, which the backlog in one lane has outgrown.
          await database.db.deleteFrom('jobs').where('account_id', '=', 'acct_plan').execute();
          await database.db
            .insertInto('jobs')
            .values(Array.from({ length: 300 }, (_, i) => job(`lane${i}`, i)))
            .execute();
          await sql`analyze jobs`.execute(database.db);
          await database.db.deleteFrom('jobs').where('account_id', '=', 'acct_plan').execute();
          await queueBacklog();
          expect(await planOf()).toEqual(['ordered']);
          expect(await jobsRepository.claim(database.db, database.capabilities, input)).toHaveLength(16);
        } finally {
          await database.db.deleteFrom('jobs').where('account_id', '=', 'acct_plan').execute();
          await sql`alter table jobs reset (autovacuum_enabled)`.execute(database.db);
        }
      });
    }
  });
}
