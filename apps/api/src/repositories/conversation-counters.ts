import { sql } from 'kysely';
import { type FilterShape, type FilterValues, filterShape, filterValues, filterOf } from './conversation-queries.js';
import type { ConversationFilter } from './conversations.js';
import { preparedByShape } from './prepared.js';
import { type Executor, TenantScope } from './tenant.js';

/**
 * How many conversations a status and platform filter selects, from the counts per account,
 * status and platform that migration 0006's triggers keep: a sum of at most nine rows, where
 * counting grows with the matches (bench/README.md, "Lists"). Every search needs the number to
 * choose between walking and sorting (conversation-search.ts), so it is kept for the search
 * targets (p99 < 50 ms at 32 connections); lists take their exact totals from it too.
 */

/**
 * The exact number of conversations of a status and/or platform filter, from the counts the
 * triggers of migration 0006 keep per account, status and platform: at most nine rows to add up.
 */
export const countersTotal = (scope: TenantScope, filter: ConversationFilter) => {
  let query = scope.selectFrom('conversation_counts');
  if (filter.status) query = query.where('conversation_counts.status', '=', filter.status);
  if (filter.platform) query = query.where('conversation_counts.platform', '=', filter.platform);
  return query.select((eb) => eb.fn.coalesce(eb.fn.sum<number>('conversation_counts.count'), sql.lit(0)).as('total'));
};

/** countersTotal, compiled once per shape. */
const countersQuery = preparedByShape((db: Executor, shape: FilterShape, values: FilterValues) =>
  countersTotal(new TenantScope(db, values.accountId), filterOf(shape, values)),
);

/** countersTotal, run. */
export const countFromCounters = (scope: TenantScope, filter: ConversationFilter) =>
  countersQuery(scope, filterShape(filter), filterValues(scope, filter)).then((rows) => Number(rows[0]?.total ?? 0));
