import { type Expression, sql } from 'kysely';
import type { Dialect } from '../../db/dialect.js';
import { prepared, preparedByShape } from '../prepared.js';
import { type Executor, TenantScope } from '../tenant.js';
import { countersTotal } from './counters-page.js';
import { WALK_WHEN_ENTRIES_PER_MATCH_SQUARED, walkIsCheaper } from './plan.js';
import { type PageShape, conversationsThrough, offsetOf, pageOf, pageShape, rowsWithIdsIn } from './rows.js';
import type { ConversationWithContact, ListResult, Page } from './types.js';

/**
 * A three-character name search without a filter, for `search_name` (≥ 0.7× the expert floor, p99 <
 * 50 ms): the exact total is the fragment's row of migration 0008's trigram counts, and the page's
 * ids come from walking `conversations_activity_idx` newest first, checking each entry's copy of its
 * contact's name: no contact is read. Undefined when sorting the matches is cheaper than the walk
 * (a rare fragment): the list then takes the way of any other search.
 */
export async function trigramPage(scope: TenantScope, trigram: string, page: Page): Promise<ListResult | undefined> {
  if (scope.dialect.lateralJoins) {
    // One statement: the counts, and the walk's rows when walking is the cheaper way.
    const values = { accountId: scope.accountId, trigram, offset: offsetOf(page) };
    const found = (await totalAndWalkQuery(scope, pageShape(page), values)) as (ConversationWithContact & {
      total: unknown;
      selected: unknown;
    })[];
    const total = Number(found[0]?.total ?? 0);
    if (total <= page.offset) return { rows: [], total };
    if (!walkIsCheaper(page, Number(found[0]?.selected ?? 0), total)) return undefined;
    return { rows: found.filter((row) => row.id !== null).map(({ total: _, selected: __, ...row }) => row), total };
  }
  const counts = (await countsQuery(scope, scope.accountId, trigram)).rows[0];
  const total = Number(counts?.total ?? 0);
  if (total <= page.offset) return { rows: [], total };
  if (!walkIsCheaper(page, Number(counts?.selected ?? 0), total)) return undefined;
  const rows = await walkQuery(scope, pageShape(page), { accountId: scope.accountId, trigram, offset: offsetOf(page) });
  return { rows: rows as ConversationWithContact[], total };
}

/** The fragment's conversations (its trigram's count) and all the account's (the counters). */
const counts = (scope: TenantScope, trigram: string) => ({
  total: sql<number>`coalesce((${scope
    .selectFrom('conversation_name_trigrams')
    .select('conversation_name_trigrams.conversations')
    .where('conversation_name_trigrams.trigram', '=', trigram)}), 0)`,
  selected: sql<number>`(${countersTotal(scope, {})})`,
});

const countsQuery = prepared((db: Executor, dialect: Dialect, accountId: string, trigram: string) => {
  const { total, selected } = counts(new TenantScope(db, accountId, dialect), trigram);
  return db.selectNoFrom([total.as('total'), selected.as('selected')]);
});

/** The conversations whose copy of the contact's name contains the fragment, along the activity index. */
const walked = (scope: TenantScope, trigram: string) =>
  conversationsThrough(scope, 'conversations_activity_idx').where(() =>
    scope.dialect.contains('conversations.contact_name_search', trigram),
  );

type WalkValues = { accountId: string; trigram: string; offset: number | undefined };

const walkQuery = preparedByShape((db: Executor, dialect: Dialect, shape: PageShape, values: WalkValues) => {
  const scope = new TenantScope(db, values.accountId, dialect);
  return pageOf(scope, walked(scope, values.trigram), 'activity', shape, values.offset);
});

/**
 * The counts and, through a LATERAL join, the walk's rows; the walk's LIMIT is 0 when sorting is
 * cheaper (walkIsCheaper, evaluated by the database), which ends it before its first entry.
 */
const totalAndWalkQuery = preparedByShape((db: Executor, dialect: Dialect, shape: PageShape, values: WalkValues) => {
  const scope = new TenantScope(db, values.accountId, dialect);
  const { total, selected } = counts(scope, values.trigram);
  const limit = (total: Expression<number>, selected: Expression<number>) => {
    const cheaper = sql`(${sql.lit(shape.limit)} + ${shape.deep ? values.offset : sql.lit(0)}) * ${selected} <= ${sql.lit(WALK_WHEN_ENTRIES_PER_MATCH_SQUARED)} * ${total} * ${total}`;
    return sql<number>`case when ${cheaper} then ${sql.lit(shape.limit)} else 0 end`;
  };
  const ordered = walked(scope, values.trigram)
    .select('conversations.id')
    .orderBy('conversations.last_activity_at', 'desc');
  const ids = ordered.orderBy('conversations.id', 'desc').limit(limit(sql.ref('t.total'), sql.ref('t.selected')));
  const paged = shape.deep ? ids.offset(values.offset as number) : ids;
  return db
    .selectFrom(sql`(select ${total} as total, ${selected} as selected)`.as('t'))
    .leftJoinLateral(
      () => rowsWithIdsIn(scope, dialect.listFrom(paged)).as('r'),
      (join) => join.onTrue(),
    )
    .select([sql<number>`t.total`.as('total'), sql<number>`t.selected`.as('selected')])
    .selectAll('r' as never)
    .orderBy(sql`r.last_activity_at`, 'desc')
    .orderBy(sql`r.id`, 'desc');
});
