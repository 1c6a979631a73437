import { type Selectable, sql } from 'kysely';
import { lockNameForTransaction } from '../db/dialect.js';
import type { EventTable } from '../db/schema.js';
import { EVENTS_CHANNEL, eventsWrittenHere } from '../db/event-notifications.js';
import { type Executor, type TenantScope, withTotal } from './tenant.js';

export type EventRow = Selectable<EventTable>;
/** An event as deliveries and the API show it: its log position is the events list's business only. */
export type StoredEvent = Omit<EventRow, 'position'>;

type EventFilter = { type?: EventRow['type'] | undefined; since: string };

/** The account's listed events: since `since`, of `type` when given, never an endpoint's test ping. */
function listed(scope: TenantScope, filter: EventFilter) {
  const base = scope
    .selectFrom('events')
    .where('events.created_at', '>=', filter.since)
    .where('events.type', '<>', 'ping');
  return filter.type ? base.where('events.type', '=', filter.type) : base;
}

export const eventsRepository = {
  insert: (scope: TenantScope, rows: Omit<EventRow, 'account_id'> | Omit<EventRow, 'account_id'>[]) =>
    scope.insert('events', rows),

  /** Newest first, ties by id descending; only events since `since`. */
  async list(scope: TenantScope, filter: EventFilter, page: { limit: number; offset: number }) {
    const base = listed(scope, filter);
    const rows = base
      .selectAll()
      .orderBy('events.created_at', 'desc')
      .orderBy('events.id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    return withTotal(rows, base);
  },

  /**
   * Gives the account's committed events that have none their positions, after the highest, in
   * (created_at, id) order. Call it in a transaction: callers for one account take turns (a named
   * lock, which no writer of events waits on), so an event committed later gets a later position.
   */
  async assignPositions(scope: TenantScope): Promise<void> {
    await lockNameForTransaction(scope, `event-positions:${scope.accountId}`);
    const pending = await scope
      .selectFrom('events')
      .select('events.id')
      .where('events.position', 'is', null)
      .limit(1)
      .executeTakeFirst();
    if (!pending) return;
    await sql`update events set position = numbered.n
      from (
        select id, (select coalesce(max(position), 0) from events where account_id = ${scope.accountId}) + row_number() over (order by created_at, id) as n
        from events where account_id = ${scope.accountId} and position is null
      ) as numbered
      where events.account_id = ${scope.accountId} and events.id = numbered.id`.execute(scope.db);
  },

  /** Whether committed events of the account still wait for their positions (a cheap check before assignPositions). */
  hasUnpositioned: async (scope: TenantScope) =>
    (await scope
      .selectFrom('events')
      .select('events.id')
      .where('events.position', 'is', null)
      .limit(1)
      .executeTakeFirst()) !== undefined,

  /** The newest event with a position (never a ping): where a stream from now starts. */
  newestPositioned: (scope: TenantScope) =>
    scope
      .selectFrom('events')
      .select(['events.id', 'events.position'])
      .where('events.position', 'is not', null)
      .where('events.type', '<>', 'ping')
      .orderBy('events.position', 'desc')
      .limit(1)
      .executeTakeFirst(),

  /** The next `limit` events after `position`, in log order; never an endpoint's test ping. */
  after: (scope: TenantScope, position: number, limit: number) =>
    scope
      .selectFrom('events')
      .selectAll()
      .where('events.position', '>', position)
      .where('events.type', '<>', 'ping')
      .orderBy('events.position', 'asc')
      .limit(limit)
      .execute(),

  /**
   * Tells the event streams of every process that the account has new events, when the
   * transaction commits: NOTIFY on Postgres; SQLite's streams see the commit themselves.
   */
  announce: async (scope: TenantScope) => {
    if (scope.dialect.notifiesCommits)
      await sql`select pg_notify(${EVENTS_CHANNEL}, ${scope.accountId})`.execute(scope.db);
    else eventsWrittenHere();
  },

  findById: (scope: TenantScope, id: string) =>
    scope.selectFrom('events').selectAll().where('events.id', '=', id).executeTakeFirst(),

  /** An event's position (after assignPositions), or undefined for an unknown id. */
  positionOf: async (scope: TenantScope, id: string) =>
    (
      await scope
        .selectFrom('events')
        .select('events.position')
        .where('events.id', '=', id)
        .where('events.type', '<>', 'ping')
        .executeTakeFirst()
    )?.position,

  /**
   * A page of events by position from a cursor: before it (`starting_after`, newest first) or
   * after it (`ending_before`: the `limit` oldest after it, returned newest first), and how many
   * events lie on the cursor's side (the page's `total`, CONTRACT: Pagination).
   */
  async listFrom(
    scope: TenantScope,
    filter: EventFilter,
    cursor: { direction: 'before' | 'after'; position: number; after?: number },
    page: { limit: number; offset: number },
  ) {
    let base = listed(scope, filter).where(
      'events.position',
      cursor.direction === 'before' ? '<' : '>',
      cursor.position,
    );
    if (cursor.after !== undefined) base = base.where('events.position', '>', cursor.after);
    const order = cursor.direction === 'before' ? 'desc' : 'asc';
    const [rows, beyond] = await Promise.all([
      base.selectAll().orderBy('events.position', order).limit(page.limit).offset(page.offset).execute(),
      base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
    ]);
    if (cursor.direction === 'after') rows.reverse();
    return { rows, total: Number(beyond.n) };
  },

  /** Deletes events older than `before`, across accounts (the worker's retention job). */
  prune: async (db: Executor, before: string) =>
    Number((await db.deleteFrom('events').where('created_at', '<', before).executeTakeFirst()).numDeletedRows),
};
