import type { Selectable } from 'kysely';
import { lockedForUpdate } from '../db/dialect.js';
import type { JobTable } from '../db/schema.js';
import type { Executor } from './tenant.js';

export type JobRow = Selectable<JobTable>;

/**
 * The worker's queue. Jobs are claimed by setting a lease (locked_by, locked_until); a worker
 * that dies mid-job loses its lease when it expires and another worker takes the job again.
 */
export const jobsRepository = {
  insert: (db: Executor, row: JobRow) => db.insertInto('jobs').values(row).execute(),

  /**
   * Claims up to `limit` due jobs whose lease is free or expired. On Postgres the candidates are
   * read with FOR UPDATE SKIP LOCKED, so concurrent workers never claim the same job; SQLite runs
   * one writer at a time, so the claim is atomic there as it is.
   */
  async claim(db: Executor, input: { workerId: string; limit: number; now: string; leaseUntil: string }): Promise<JobRow[]> {
    return db.transaction().execute(async (trx) => {
      const candidates = await lockedForUpdate(
        trx,
        trx
          .selectFrom('jobs')
          .select('id')
          .where('run_at', '<=', input.now)
          .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', input.now)]))
          .orderBy('run_at')
          .orderBy('id')
          .limit(input.limit),
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
