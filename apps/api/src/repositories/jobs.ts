import { type ExpressionBuilder, type Selectable, sql } from 'kysely';
import { lockUntilCommit, lockedForUpdate } from '../db/dialect.js';
import type { Database, JobTable } from '../db/schema.js';
import type { Executor } from './tenant.js';

export type JobRow = Selectable<JobTable>;

/** Jobs of one account running at once, across workers: a flooding account leaves the rest of each worker's slots to others. */
export const ACCOUNT_RUNNING_MAX = 8;
/** Jobs of one lane (a webhook endpoint's deliveries) running at once, across workers. */
export const LANE_RUNNING_MAX = 4;

/** The advisory lock of claims (any number no other lock of the database uses). */
const CLAIM_LOCK = 0x6a6f6273;

const leaseIsFree = (now: string) => (eb: ExpressionBuilder<Database, 'jobs'>) =>
  eb.or([eb('jobs.locked_until', 'is', null), eb('jobs.locked_until', '<', now)]);

/**
 * The ids of the due jobs to claim next, taking turns between accounts: each account's oldest
 * due job first, then each one's second, and so on, leaving out an account's jobs beyond
 * ACCOUNT_RUNNING_MAX running at once and a lane's beyond LANE_RUNNING_MAX. One account's flood
 * therefore never stands in front of another account's job.
 */
function fairlyDue(db: Executor, now: string, limit: number) {
  return db
    .with('due', (qb) =>
      qb
        .selectFrom('jobs')
        .where('jobs.run_at', '<=', now)
        .where(leaseIsFree(now))
        .select((eb) => [
          'jobs.id',
          'jobs.account_id',
          'jobs.lane',
          'jobs.run_at',
          eb.fn
            .agg<number>('row_number')
            .over((over) => over.partitionBy('jobs.account_id').orderBy('jobs.run_at').orderBy('jobs.id'))
            .as('account_turn'),
          eb.fn
            .agg<number>('row_number')
            .over((over) => over.partitionBy('jobs.lane').orderBy('jobs.run_at').orderBy('jobs.id'))
            .as('lane_turn'),
        ]),
    )
    .with('running_accounts', (qb) =>
      qb
        .selectFrom('jobs')
        .where('jobs.locked_until', '>=', now)
        .groupBy('jobs.account_id')
        .select((eb) => ['jobs.account_id', eb.fn.countAll<number>().as('running')]),
    )
    .with('running_lanes', (qb) =>
      qb
        .selectFrom('jobs')
        .where('jobs.lane', 'is not', null)
        .where('jobs.locked_until', '>=', now)
        .groupBy('jobs.lane')
        .select((eb) => ['jobs.lane', eb.fn.countAll<number>().as('running')]),
    )
    .selectFrom('due')
    .leftJoin('running_accounts', 'running_accounts.account_id', 'due.account_id')
    .leftJoin('running_lanes', 'running_lanes.lane', 'due.lane')
    .where(sql<number>`due.account_turn + coalesce(running_accounts.running, 0)`, '<=', ACCOUNT_RUNNING_MAX)
    .where((eb) => eb.or([eb('due.lane', 'is', null), eb(sql<number>`due.lane_turn + coalesce(running_lanes.running, 0)`, '<=', LANE_RUNNING_MAX)]))
    .select('due.id')
    .orderBy('due.account_turn')
    .orderBy('due.run_at')
    .orderBy('due.id')
    .limit(limit);
}

/**
 * The worker's queue. Jobs are claimed by setting a lease (locked_by, locked_until); a worker
 * that dies mid-job loses its lease when it expires and another worker takes the job again.
 */
export const jobsRepository = {
  insert: (db: Executor, row: JobRow) => db.insertInto('jobs').values(row).execute(),

  /**
   * Claims up to `limit` due jobs whose lease is free or expired, fairly (fairlyDue). Claims run
   * one at a time (an advisory lock on Postgres; SQLite runs one writer at a time), so the running
   * counts they go by are exact across workers and no job is claimed twice.
   */
  async claim(db: Executor, input: { workerId: string; limit: number; now: string; leaseUntil: string }): Promise<JobRow[]> {
    return db.transaction().execute(async (trx) => {
      // Claims take turns, so that each one counts the jobs the others have just claimed.
      await lockUntilCommit(trx, CLAIM_LOCK);
      const candidates = await lockedForUpdate(
        trx,
        trx
          .selectFrom('jobs')
          .select('id')
          .where('id', 'in', fairlyDue(trx, input.now, input.limit))
          .where(leaseIsFree(input.now)),
        { skipLocked: true },
      ).execute();
      if (candidates.length === 0) return [];
      return trx
        .updateTable('jobs')
        .set((eb) => ({ locked_by: input.workerId, locked_until: input.leaseUntil, attempts: eb('attempts', '+', 1) }))
        .where(
          'id',
          'in',
          candidates.map((c) => c.id),
        )
        .returningAll()
        .execute();
    });
  },

  /** When the current claim on the job runs out; null when nobody holds it. */
  leaseOf: async (db: Executor, id: string): Promise<string | null> =>
    (await db.selectFrom('jobs').select('locked_until').where('id', '=', id).executeTakeFirst())?.locked_until ?? null,

  /** Done: the job leaves the queue (only if this worker still holds it). */
  complete: (db: Executor, id: string, workerId: string) => db.deleteFrom('jobs').where('id', '=', id).where('locked_by', '=', workerId).execute(),

  /** Runs the job again at `runAt`, releasing the lease. */
  reschedule: (db: Executor, id: string, workerId: string, runAt: string, payload?: string) =>
    db
      .updateTable('jobs')
      .set({ run_at: runAt, locked_by: null, locked_until: null, ...(payload === undefined ? {} : { payload }) })
      .where('id', '=', id)
      .where('locked_by', '=', workerId)
      .execute(),

  /** Gives claimed jobs back at once (graceful stop). */
  release: (db: Executor, workerId: string) => db.updateTable('jobs').set({ locked_by: null, locked_until: null }).where('locked_by', '=', workerId).execute(),
};
