import type { Selectable } from 'kysely';
import type { EventTable } from '../db/schema.js';
import type { Executor, TenantScope } from './tenant.js';

export type EventRow = Selectable<EventTable>;

export const eventsRepository = {
  insert: (scope: TenantScope, row: Omit<EventRow, 'account_id'>) => scope.insert('events', row),

  /** Newest first, ties by id descending; only events since `since`. */
  async list(scope: TenantScope, filter: { type?: EventRow['type'] | undefined; since: string }, page: { limit: number; offset: number }) {
    let base = scope.selectFrom('events').where('events.created_at', '>=', filter.since);
    if (filter.type) base = base.where('events.type', '=', filter.type);
    const [rows, count] = await Promise.all([
      base.selectAll().orderBy('events.created_at', 'desc').orderBy('events.id', 'desc').limit(page.limit).offset(page.offset).execute(),
      base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
    ]);
    return { rows, total: Number(count.total) };
  },

  /** Deletes events older than `before`, across accounts (the worker's retention job). */
  prune: async (db: Executor, before: string) => Number((await db.deleteFrom('events').where('created_at', '<', before).executeTakeFirst()).numDeletedRows),
};
