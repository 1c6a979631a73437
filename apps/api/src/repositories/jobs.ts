import { type Selectable, type SqlBool, sql } from 'kysely';
import { dialectOf } from '../db/dialect.js';
import type { JobTable } from '../db/schema.js';
import type { Executor } from './tenant.js';

export type JobRow = Selectable<JobTable>;

/** Deliveries to one endpoint running at once, across all workers: a slow receiver ties up no more. */
export const MAX_RUNNING_PER_ENDPOINT = 8;

/** The job of `alias` is due at `now` and nobody holds it (or its holder's lease ran out). */
const isDue = (alias: string, now: string) =>
  sql<SqlBool>`${sql.ref(`${alias}.run_at`)} <= ${now} and (${sql.ref(`${alias}.locked_until`)} is null or ${sql.ref(`${alias}.locked_until`)} < ${now})`;

export interface ClaimInput {
  workerId: string;
  /** Jobs to claim at most: the worker's free slots. */
  limit: number;
  now: string;
  leaseUntil: string;
  /** Jobs of one account this claim may take at most (the worker's per-account slots); `limit` by default. */
  perAccount?: number;
  /** Fewer for the accounts that already run jobs on this worker: account id → jobs it may still take. */
  accountRoom?: Record<string, number>;
}

/**
 * The ids of the jobs to claim, in turns: every account's oldest due job first, then every
 * account's second, and so on, so a flood of one account never stands in front of another
 * account's job. Candidates are found lane by lane (queue.ts: an endpoint's deliveries, an
 * account's other jobs), stepping from one lane to the next and along each lane's due jobs
 * through `jobs_lane_due_idx`, never by reading the whole queue; an endpoint's lane yields only
 * what keeps it within MAX_RUNNING_PER_ENDPOINT (its running jobs counted through
 * `jobs_lane_lease_idx`). Each lane yields up to twice the claim, so that workers claiming at the
 * same moment each find their share past the rows another has locked (FOR UPDATE SKIP LOCKED).
 */
function claimable(db: Executor, input: ClaimInput) {
  const dialect = dialectOf(db);
  const due = (alias: string) => isDue(alias, input.now);
  const perLane = sql.lit(2 * input.limit);
  const endpointCap = sql.lit(MAX_RUNNING_PER_ENDPOINT);
  const accountRoom = dialect.numberIn(JSON.stringify(input.accountRoom ?? {}), 'j.account_id');
  return sql<string>`
    with recursive lanes(lane) as (
      select min(lane) from jobs
      union all
      select (select min(j.lane) from jobs j where j.lane > l.lane) from lanes l where l.lane is not null
    ),
    walk(lane, id, n, room) as (
      select l.lane,
        (select j.id from jobs j where j.lane = l.lane and ${due('j')} order by j.run_at, j.id limit 1),
        1,
        case when l.lane like 'endpoint:%'
          then ${endpointCap} - (select count(*) from jobs r where r.lane = l.lane and r.locked_until >= ${input.now})
          else ${perLane} end
      from lanes l where l.lane is not null
      union all
      select w.lane,
        (select j.id from jobs j join jobs p on p.id = w.id
          where j.lane = w.lane and (j.run_at, j.id) > (p.run_at, p.id) and ${due('j')} order by j.run_at, j.id limit 1),
        w.n + 1, w.room
      from walk w where w.id is not null and w.n < w.room and w.n < ${perLane}
    ),
    turns as (
      select j.id, j.run_at, row_number() over (partition by j.account_id order by j.run_at, j.id) as turn
      from walk w join jobs j on j.id = w.id where w.n <= w.room
    )
    select j.id from turns t join jobs j on j.id = t.id
    where ${due('j')} and (j.account_id is null or t.turn <= coalesce(${accountRoom}, ${sql.lit(input.perAccount ?? input.limit)}))
    order by t.turn, t.run_at, t.id limit ${sql.lit(input.limit)}
    ${dialect.rowLocks ? sql`for update of j skip locked` : sql``}`;
}

/**
 * The worker's queue. Jobs are claimed by setting a lease (locked_by, locked_until); a worker
 * that dies mid-job loses its lease when it expires and another worker takes the job again.
 */
export const jobsRepository = {
  insert: (db: Executor, row: JobRow) => db.insertInto('jobs').values(row).execute(),

  /**
   * Claims up to `limit` due jobs whose lease is free or expired, in the order of claimable(), in
   * one statement: on Postgres the chosen rows are locked with SKIP LOCKED, so concurrent workers
   * never claim the same job; SQLite runs one writer at a time, so the statement is atomic there.
   */
  claim: (db: Executor, input: ClaimInput): Promise<JobRow[]> =>
    db
      .updateTable('jobs')
      .set((eb) => ({ locked_by: input.workerId, locked_until: input.leaseUntil, attempts: eb('attempts', '+', 1) }))
      .where('id', 'in', sql<string>`(${claimable(db, input)})`)
      .returningAll()
      .execute(),

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
