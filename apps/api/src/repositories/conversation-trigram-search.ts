import { type Expression, sql } from 'kysely';
import { dialectOf } from '../db/dialect.js';
import { countersTotal } from './conversation-counters.js';
import { type Page, walkIsCheaper, walkLimit, reachOf, rowsWithIdsIn, rowsWithIds } from './conversation-queries.js';
import type { ConversationWithContact, ConversationFilter } from './conversations.js';
import { prepared } from './prepared.js';
import { type Executor, TenantScope } from './tenant.js';

/**
 * A three-character name search answered without reading its contacts, from migration 0008's copy
 * of each contact's name on its conversations and the per-trigram conversation counts: kept for
 * `search_name`'s p99 < 50 ms at 32 connections (bench/README.md).
 */
/** A search `fragment` whose total `conversation_name_trigrams` keeps: three characters, the name alone (no digits). */
export const isTrigramSearch = (filter: ConversationFilter): filter is ConversationFilter & { search: string } =>
  Boolean(filter.search && !filter.searchDigits && !filter.status && !filter.platform && [...filter.search].length === 3);

/**
 * A search for a three-character name fragment without a status or platform filter
 * (isTrigramSearch), answered without reading its contacts (migration 0008): its exact total is
 * the fragment's row in `conversation_name_trigrams`, and when walking is the cheaper way to the
 * page (the rule of WALK_WHEN_ENTRIES_PER_MATCH_SQUARED, evaluated by the database as the walk's
 * LIMIT, as in searchSummary) the page's ids come from walking `conversations_activity_idx` newest
 * first, keeping the entries whose copy of the contact's name contains the fragment: the index
 * alone. On SQLite that is one statement and the page's rows (rowsWithIds) a second; Postgres
 * joins the rows in the same statement (a round trip less), through a LATERAL join that SQLite
 * does not have. `rows` is undefined when sorting the matches is cheaper (a rare fragment): the
 * caller then takes the way of any other search.
 */
export const trigramSearch = async (
  scope: TenantScope,
  search: string,
  page: Page,
): Promise<{ total: number; rows: ConversationWithContact[] | undefined }> => {
  const { reach, limit } = reachOf(page);
  const { rows } = await trigramSearchQuery(scope, scope.accountId, search, reach, limit, page.offset);
  const found = rows as (ConversationWithContact & { total: number; selected: number; walked?: string | null })[];
  const count = Number(found[0]?.total ?? 0);
  const walks = walkIsCheaper(page, Number(found[0]?.selected ?? 0), count);
  if (!dialectOf(scope.db).lateralJoins)
    return { total: count, rows: walks ? await rowsWithIds(scope, JSON.parse(found[0]?.walked ?? '[]') as string[]) : undefined };
  const pageRows = found.filter((row) => row.id !== null).map(({ total: _, selected: __, ...row }) => row as ConversationWithContact);
  return { total: count, rows: walks ? pageRows : undefined };
};

/**
 * trigramSearch's statement, built and compiled once (prepared): Postgres' one row per
 * conversation of the page, each with the total (one row of nulls but the total when the page is
 * empty or not walked); SQLite's one row of the total and the page's ids as a JSON list.
 */
export const trigramSearchQuery = prepared((db: Executor, accountId: string, trigram: string, reach: number, limit: number, offset: number) => {
  const scope = new TenantScope(db, accountId);
  const dialect = dialectOf(db);
  const total = sql<number>`coalesce((${scope.selectFrom('conversation_name_trigrams').select('conversation_name_trigrams.conversations').where('conversation_name_trigrams.trigram', '=', trigram)}), 0)`;
  const selected = sql<number>`(${countersTotal(scope, {})})`;
  const walk = (total: Expression<number>, selected: Expression<number>) =>
    scope
      .selectFrom('conversations')
      .select('conversations.id')
      // The fragment is the trigram; checked on each entry of the walk, no index answers it.
      .where(() => dialect.contains('conversations.contact_name_search', trigram))
      .orderBy('conversations.last_activity_at', 'desc')
      .orderBy('conversations.id', 'desc')
      .limit(walkLimit(db, { reach, limit }, selected, total) as never)
      .offset(dialect.planAlike(offset, 'bigint'));
  if (dialect.lateralJoins) {
    const walked = sql<string[] | null>`(select array_agg(w.id) from (${walk(sql.ref('x.total'), sql.ref('x.selected'))}) w)`;
    return db
      .selectFrom(sql`(select x.total, x.selected, ${walked} as walked from (select ${total} as total, ${selected} as selected) x)`.as('t'))
      .leftJoinLateral(
        () => rowsWithIdsIn(scope, sql.ref('t.walked')).as('r'),
        (join) => join.onTrue(),
      )
      .select([sql<number>`t.total`.as('total'), sql<number>`t.selected`.as('selected')])
      .selectAll('r' as never)
      .orderBy(sql`r.last_activity_at`, 'desc')
      .orderBy(sql`r.id`, 'desc');
  }
  const ids = sql<string | null>`(select json_group_array(w.id) from (${walk(total, selected)}) w)`;
  return db.selectNoFrom([total.as('total'), selected.as('selected'), ids.as('walked')]);
});
