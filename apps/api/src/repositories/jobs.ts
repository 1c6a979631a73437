import { type Selectable, type SqlBool, sql } from 'kysely';
import { lockedForUpdate } from '../db/dialect.js';
import type { JobTable } from '../db/schema.js';
import type { Executor } from './tenant.js';

export type JobRow = Selectable<JobTable>;

/** The job of `alias` is due at `now` and nobody holds it (or its holder's lease ran out). */
const isDue = (alias: string, now: string) =>
  sql<SqlBool>`${sql.ref(`${alias}.run_at`)} <= ${now} and (${sql.ref(`${alias}.locked_until`)} is null or ${sql.ref(`${alias}.locked_until`)} < ${now})`;

/** Ranks an oldest-of-all candidate after every account's oldest (whose rank is its number of running jobs). */
const NOT_A_HEAD = 1_000_000_000;

/**
 * The ids of the due jobs to claim next: the oldest due job of every account first, those of
 * accounts with the fewest jobs running before the others, then the oldest due jobs of all. One
 * account's flood therefore never stands in front of another account's job: that job is in the
 * next claim. The accounts with due jobs are found by stepping through `jobs_account_due_idx` from
 * one account to the next (a recursive query, one index probe per account), never by reading the
 * whole queue.
 */
function fairlyDue(now: string, limit: number) {
  const due = (alias: string) => isDue(alias, now);
  return sql<string>`
    with recursive accounts(account_id) as (
      select (select j.account_id from jobs j where j.account_id is not null and ${due('j')} order by j.account_id limit 1)
      union all
      select (select j.account_id from jobs j where j.account_id > a.account_id and ${due('j')} order by j.account_id limit 1)
      from accounts a where a.account_id is not null
    ),
    heads(id, running) as (
      select
        (select j.id from jobs j where j.account_id = a.account_id and ${due('j')} order by j.run_at, j.id limit 1),
        (select count(*) from jobs r where r.account_id = a.account_id and r.locked_until >= ${now})
      from accounts a where a.account_id is not null
    ),
    candidates(id, pass, running) as (
      select id, 0, running from heads
      union all
      select oldest.id, 1, ${NOT_A_HEAD} from (select j.id from jobs j where ${due('j')} order by j.run_at, j.id limit ${limit}) oldest
    )
    select c.id from candidates c join jobs j on j.id = c.id
    group by c.id, j.run_at order by min(c.pass), min(c.running), j.run_at, c.id limit ${limit}`;
}

/**
 * The worker's queue. Jobs are claimed by setting a lease (locked_by, locked_until); a worker
 * that dies mid-job loses its lease when it expires and another worker takes the job again.
 */
export const jobsRepository = {
  insert: (db: Executor, row: JobRow) => db.insertInto('jobs').values(row).execute(),

  /**
   * Claims up to `limit` due jobs whose lease is free or expired: every account's oldest due job
   * first (fairlyDue), then the oldest of all. On Postgres the candidates are read with FOR UPDATE
   * SKIP LOCKED, so concurrent workers never claim the same job; SQLite runs one writer at a time,
   * so the claim is atomic there as it is.
   */
  async claim(db: Executor, input: { workerId: string; limit: number; now: string; leaseUntil: string }): Promise<JobRow[]> {
    return db.transaction().execute(async (trx) => {
      const candidates = await lockedForUpdate(
        trx,
        trx
          .selectFrom('jobs')
          .select('id')
          .where('id', 'in', sql<string>`(${fairlyDue(input.now, input.limit)})`)
          // Checked again on the locked row: another claim may have taken it since.
          .where(isDue('jobs', input.now)),
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
