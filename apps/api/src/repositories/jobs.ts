import { randomUUID } from 'node:crypto';
import type { MessageTemplate } from '@convo/core';
import { type Kysely, type RawBuilder, type Selectable, type SqlBool, sql } from 'kysely';
import type { Dialect } from '../db/dialect.js';
import type { Database, JobTable } from '../db/schema.js';
import { now } from '../ids.js';
import { type Executor, insertRows } from './tenant.js';

export type JobRow = Selectable<JobTable>;

/** What a send job carries (services/messages.ts deliver): after failed tries, how many so far. */
export interface SendJob {
  messageId: string;
  template?: MessageTemplate;
  tries?: number;
}

/** What a media download job carries (services/media.ts): after failed tries, how many so far. */
export interface MediaJob {
  messageId: string;
  tries?: number;
}

/** The kinds of background work and what each job carries. */
export interface JobPayloads {
  /** One attempt of a webhook delivery. `manual` is a retry asked for through the API. */
  deliver_webhook: { deliveryId: string; manual?: boolean };
  /** The next steps of a workflow run. */
  run_workflow: { runId: string };
  /** Deletes events past their retention; reschedules itself. */
  prune_events: Record<string, never>;
  /** Sends an outbound message through its conversation's channel (services/messages.ts deliver). */
  send_message: SendJob;
  /** Processes a webhook body Meta posted to a channel (worker/process-channel-payload.ts). */
  process_channel_payload: { payloadId: string };
  /** Downloads an inbound message's media from the platform and keeps it as a file (services/media.ts). */
  download_media: MediaJob;
}
export type JobKind = keyof JobPayloads;

/** The lane of an endpoint's deliveries: at most MAX_RUNNING_PER_ENDPOINT of them run at once. */
export const endpointLane = (endpointId: string) => `endpoint:${endpointId}`;

/** The lane of a channel's sends, whose pace the channel's send rate sets (services/messages.ts deliver). */
export const channelLane = (channelId: string) => `channel:${channelId}`;

/** A job to queue: its kind, account and payload; when it is due (now by default), its id and lane. */
export interface NewJob<K extends JobKind = JobKind> {
  kind: K;
  accountId: string | null;
  payload: JobPayloads[K];
  runAt?: string;
  id?: string;
  lane?: string;
}

/** The row of a job to queue, created at `at`. */
export function jobRow(input: NewJob, at: string): JobRow {
  return {
    id: input.id ?? `job_${randomUUID()}`,
    kind: input.kind,
    account_id: input.accountId,
    payload: JSON.stringify(input.payload),
    run_at: input.runAt ?? at,
    attempts: 0,
    locked_by: null,
    locked_until: null,
    created_at: at,
    lane: input.lane ?? (input.accountId === null ? 'system' : `account:${input.accountId}`),
  };
}

/**
 * Puts a job in the queue. Called inside the transaction of the change that needs it, so the job
 * exists exactly when the change does.
 */
export async function enqueue<K extends JobKind>(db: Executor, input: NewJob<K>): Promise<string> {
  const [row] = await enqueueAll(db, [input]);
  return (row as JobRow).id;
}

/** Puts several jobs in the queue, as enqueue does, in one statement. */
export async function enqueueAll(db: Executor, inputs: readonly NewJob[]): Promise<JobRow[]> {
  const at = now();
  const rows = inputs.map((input) => jobRow(input, at));
  await insertRows(db, 'jobs', rows);
  return rows;
}
/** A job as a claim returns it: held by the claiming worker until `locked_until`. */
export type ClaimedJob = JobRow & { locked_until: string };

/**
 * Deliveries to one endpoint running at once, across all workers: a slow receiver ties up no more,
 * and no receiver gets more connections from us however many workers run. Two workers claiming at
 * the same instant may each fill the room they saw.
 */
export const MAX_RUNNING_PER_ENDPOINT = 16;

/**
 * The job of `alias` is due at `now` and nobody holds it (or its holder's lease ran out). The lease
 * is compared through coalesce, which no index serves, so that the due jobs of a lane are always
 * read in order from `jobs_lane_due_idx`: on statistics older than a burst of jobs, Postgres took
 * `locked_until is null` for rare and read and sorted the whole lane from the lease index instead.
 */
const isDue = (alias: string, now: string) =>
  sql<SqlBool>`${sql.ref(`${alias}.run_at`)} <= ${now} and coalesce(${sql.ref(`${alias}.locked_until`)}, '') < ${now}`;

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
  /** Jobs this worker finished since its last claim: they leave the queue in the claim's transaction. */
  finished?: readonly string[];
}

/**
 * The ids of the jobs to claim, in turns: every account's oldest due job first, then every
 * account's second, and so on, so a flood of one account never stands in front of another
 * account's job. Within an account its lanes take turns too (the head of each lane, then the
 * second of each), so a backlog of its own inbound payloads never stands in front of its webhook
 * deliveries. Candidates are found lane by lane (the lanes above: an endpoint's deliveries, an
 * account's other jobs): a recursive query steps from one lane to the next through
 * `jobs_lane_due_idx`, and each lane yields its oldest due jobs from the same index, never the
 * whole queue. An endpoint's lane yields only what keeps it within MAX_RUNNING_PER_ENDPOINT (its
 * running jobs counted through `jobs_lane_lease_idx`); any lane yields at most twice the claim, so
 * that workers claiming at the same moment each find their share past the rows another has locked
 * (FOR UPDATE SKIP LOCKED).
 */
function claimable(dialect: Dialect, input: ClaimInput) {
  const due = (alias: string) => isDue(alias, input.now);
  const perLane = sql.lit(2 * input.limit);
  const accountRoom = dialect.numberIn(JSON.stringify(input.accountRoom ?? {}), 'account_id');
  return sql<string>`
    with recursive lanes(lane) as (
      select min(lane) from jobs
      union all
      select (select min(j.lane) from jobs j where j.lane > l.lane) from lanes l where l.lane is not null
    ),
    rooms(lane, room) as (
      select l.lane, case when l.lane like 'endpoint:%'
        then ${sql.lit(MAX_RUNNING_PER_ENDPOINT)} - (select count(*) from jobs r where r.lane = l.lane and r.locked_until >= ${input.now})
        else ${perLane} end
      from lanes l where l.lane is not null
    ),
    ${dialect.lateralJoins ? laneHeadsByLateralJoin(due, perLane) : laneHeadsByWalk(due)},
    turns as (
      select id, run_at, account_id, row_number() over (partition by account_id order by n, run_at, id) as turn from candidates
    ),
    ranked as (
      select id, run_at, turn from turns
      where account_id is null or turn <= coalesce(${accountRoom}, ${sql.lit(input.perAccount ?? input.limit)})
      order by turn, run_at, id limit ${perLane}
    )
    select j.id from ranked t join jobs j on j.id = t.id
    -- checked again on the locked row: another claim may have taken it since
    where ${due('j')}
    order by t.turn, t.run_at, t.id limit ${sql.lit(input.limit)}
    ${dialect.rowLocks ? sql`for update of j skip locked` : sql``}`;
}

type DueCondition = (alias: string) => RawBuilder<SqlBool>;

/**
 * `candidates`: each lane's oldest due jobs, as many as its room, with their place `n` in the lane,
 * read by one index scan per lane that stops at the lane's room. A constant limit read rows of every
 * lane only to drop them, and on statistics missing or older than a lane's backlog led Postgres to
 * read the whole lane and sort it (bench/README.md, Webhook deliveries).
 */
const laneHeadsByLateralJoin = (due: DueCondition, perLane: RawBuilder<unknown>) => sql`
    candidates as (
      select j.id, j.run_at, j.account_id, row_number() over (partition by r.lane order by j.run_at, j.id) as n
      from rooms r cross join lateral (
        select j.id, j.run_at, j.account_id from jobs j where j.lane = r.lane and ${due('j')} order by j.run_at, j.id limit greatest(0, least(r.room, ${perLane}))
      ) j
    )`;

/**
 * `candidates` where there are no lateral joins (SQLite): each lane walked one due job at a time,
 * each step an index probe past the last.
 */
const laneHeadsByWalk = (due: DueCondition) => {
  const next = (column: 'id' | 'run_at') => sql`(select ${sql.ref(`j.${column}`)} from jobs j
      where j.lane = w.lane and (j.run_at, j.id) > (w.run_at, w.id) and ${due('j')} order by j.run_at, j.id limit 1)`;
  return sql`
    walk(lane, account_id, id, run_at, n, room) as (
      select r.lane, j.account_id, j.id, j.run_at, 1, r.room
      from rooms r join jobs j on j.id = (select j.id from jobs j where j.lane = r.lane and ${due('j')} order by j.run_at, j.id limit 1)
      where r.room > 0
      union all
      select w.lane, w.account_id, ${next('id')}, ${next('run_at')}, w.n + 1, w.room
      from walk w where w.id is not null and w.n < w.room
    ),
    candidates as (select id, run_at, account_id, n from walk where id is not null)`;
};

/** The claim as one statement: the jobs claimable() picks get this worker's lease. */
export const claimStatement = (db: Executor, dialect: Dialect, input: ClaimInput) =>
  db
    .updateTable('jobs')
    .set((eb) => ({ locked_by: input.workerId, locked_until: input.leaseUntil, attempts: eb('attempts', '+', 1) }))
    .where('id', 'in', sql<string>`(${claimable(dialect, input)})`)
    .returningAll();

/** Deletes the jobs this worker finished (those it still holds): one statement for many jobs. */
const deleteFinished = (db: Executor, dialect: Dialect, workerId: string, ids: readonly string[]) => {
  return db
    .deleteFrom('jobs')
    .where(dialect.isOneOf('id', dialect.boundList(ids)))
    .where('locked_by', '=', workerId)
    .execute();
};

/**
 * The worker's queue. Jobs are claimed by setting a lease (locked_by, locked_until); a worker
 * that dies mid-job loses its lease when it expires and another worker takes the job again.
 */
export const jobsRepository = {
  insert: (db: Executor, rows: JobRow[]) => insertRows(db, 'jobs', rows),

  /**
   * Claims up to `limit` due jobs whose lease is free or expired, in the order of claimable(), in
   * one statement: on Postgres the chosen rows are locked with SKIP LOCKED, so concurrent workers
   * never claim the same job; SQLite runs one writer at a time, so the statement is atomic there.
   * The jobs the worker finished since its last claim leave the queue in the same transaction:
   * one commit for both, not one per finished job (bench/README.md, Webhook deliveries).
   */
  claim: (db: Kysely<Database>, dialect: Dialect, input: ClaimInput): Promise<ClaimedJob[]> =>
    db.transaction().execute(async (trx) => {
      if (input.finished && input.finished.length > 0)
        await deleteFinished(trx, dialect, input.workerId, input.finished);
      return (await claimStatement(trx, dialect, input).execute()) as ClaimedJob[];
    }),

  /** The jobs a worker finished leave the queue (those it still holds); claim does it for the jobs it is given. */
  finish: (db: Executor, dialect: Dialect, workerId: string, ids: readonly string[]) =>
    ids.length === 0 ? Promise.resolve() : deleteFinished(db, dialect, workerId, ids).then(() => {}),

  /** Runs the job again at `runAt`, releasing the lease. */
  reschedule: (db: Executor, id: string, workerId: string, runAt: string, payload?: string) =>
    db
      .updateTable('jobs')
      .set({ run_at: runAt, locked_by: null, locked_until: null, ...(payload === undefined ? {} : { payload }) })
      .where('id', '=', id)
      .where('locked_by', '=', workerId)
      .execute(),

  /**
   * Extends this worker's lease on the jobs `ids` (those it still holds) to `leaseUntil`. A worker
   * renews while it lives, so a short lease is safe for long jobs and a dead worker's jobs are soon
   * free. By id, through the primary key: no index leads with `locked_by`.
   */
  renew: (db: Executor, dialect: Dialect, workerId: string, ids: readonly string[], leaseUntil: string) => {
    if (ids.length === 0) return Promise.resolve();
    return db
      .updateTable('jobs')
      .set({ locked_until: leaseUntil })
      .where(dialect.isOneOf('id', dialect.boundList(ids)))
      .where('locked_by', '=', workerId)
      .where('locked_until', 'is not', null)
      .execute()
      .then(() => {});
  },

  /** Gives claimed jobs back at once (graceful stop). */
  release: (db: Executor, workerId: string) =>
    db.updateTable('jobs').set({ locked_by: null, locked_until: null }).where('locked_by', '=', workerId).execute(),
};
