import { sql } from 'kysely';
import type { Dialect } from '../../db/dialect.js';
import { preparedByShape } from '../prepared.js';
import { type Executor, TenantScope } from '../tenant.js';
import {
  type ConversationFilter,
  type FilterShape,
  type FilterValues,
  filterOf,
  filterShape,
  filterValues,
  whereFiltered,
} from './filter.js';
import { type PageShape, limitedTo, offsetOf, pageOf, pageShape, rowsWithIdsIn } from './rows.js';
import type { ConversationWithContact, ListResult, Page } from './types.js';

/**
 * The list without a search, for `list_active` and `list_offset` (≥ 0.7× the expert floor): the
 * exact total from migration 0006's counters (at most nine rows, where counting grows with the
 * matches), the page's ids from a status/platform index alone, then only those rows read.
 */
export async function countersPage(scope: TenantScope, filter: ConversationFilter, page: Page): Promise<ListResult> {
  const shape = { ...filterShape(filter), ...pageShape(page) };
  const values = { ...filterValues(scope, filter), offset: offsetOf(page) };
  if (scope.dialect.lateralJoins) {
    // One statement: the total, and the page's rows unless the offset is past it.
    const found = (await totalAndPageQuery(scope, shape, values)) as (ConversationWithContact & { total: unknown })[];
    const total = Number(found[0]?.total ?? 0);
    return { rows: found.filter((row) => row.id !== null).map(({ total: _, ...row }) => row), total };
  }
  const total = await countFromCounters(scope, filter);
  if (total <= page.offset) return { rows: [], total };
  return { rows: (await pageQuery(scope, shape, values)) as ConversationWithContact[], total };
}

/** The exact number of conversations a filter selects, from the counters migration 0006's triggers keep. */
export const countersTotal = (scope: TenantScope, filter: ConversationFilter) =>
  whereFiltered(scope.selectFrom('conversation_counts'), 'conversation_counts', filter).select((eb) =>
    eb.fn.coalesce(eb.fn.sum<number>('conversation_counts.count'), sql.lit(0)).as('total'),
  );

const countersQuery = preparedByShape((db: Executor, dialect: Dialect, shape: FilterShape, values: FilterValues) =>
  countersTotal(new TenantScope(db, values.accountId, dialect), filterOf(shape, values)),
);

/** countersTotal, run. */
export const countFromCounters = (scope: TenantScope, filter: ConversationFilter) =>
  countersQuery(scope, filterShape(filter), filterValues(scope, filter)).then((rows) => Number(rows[0]?.total ?? 0));

type ListShape = FilterShape & PageShape;
type ListValues = FilterValues & { offset: number | undefined };

const idsQuery = (scope: TenantScope, filter: ConversationFilter) =>
  whereFiltered(scope.selectFrom('conversations'), 'conversations', filter);

const pageQuery = preparedByShape((db: Executor, dialect: Dialect, shape: ListShape, values: ListValues) => {
  const scope = new TenantScope(db, values.accountId, dialect);
  return pageOf(scope, idsQuery(scope, filterOf(shape, values)), 'activity', shape, values.offset);
});

/** The counters' total (materialized once) joined to the page's rows when the offset is before it. */
const totalAndPageQuery = preparedByShape((db: Executor, dialect: Dialect, shape: ListShape, values: ListValues) => {
  const scope = new TenantScope(db, values.accountId, dialect);
  const filter = filterOf(shape, values);
  const ordered = idsQuery(scope, filter).select('conversations.id').orderBy('conversations.last_activity_at', 'desc');
  const ids = limitedTo(ordered.orderBy('conversations.id', 'desc'), shape, values.offset);
  return db
    .with(
      (cte) => cte('t').materialized(),
      () => countersTotal(scope, filter),
    )
    .selectFrom('t')
    .leftJoinLateral(
      () => rowsWithIdsIn(scope, dialect.listFrom(ids)).as('r'),
      (join) => join.on(sql<boolean>`t.total > ${shape.deep ? values.offset : sql.lit(0)}`),
    )
    .select(sql<number>`t.total`.as('total'))
    .selectAll('r' as never)
    .orderBy(sql`r.last_activity_at`, 'desc')
    .orderBy(sql`r.id`, 'desc');
});
