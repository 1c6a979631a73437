import { type AliasedExpression, type Expression, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import { dialectOf } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { type SearchColumn, type SearchTerm, bindSearch, contactMatches, foundBySearchTable } from './contact-search.js';
import type { ConversationRow, ConversationWithContact, ConversationFilter } from './conversations.js';
import { prepared, preparedByShape } from './prepared.js';
import { type Executor, type NoSelection, TenantScope } from './tenant.js';

/**
 * The pieces a conversation list and its searches are built from: the conversations a filter
 * selects (by a list of ids, a probe per contact, or a walk along an activity index), a page of
 * them with their contacts, and the rule that picks walking or sorting.
 */
type ConversationsQuery = SelectQueryBuilder<Database, 'conversations', NoSelection>;

const withContactJoined = (conversations: ConversationsQuery) =>
  conversations.innerJoin('contacts', (join) =>
    join.onRef('contacts.account_id', '=', 'conversations.account_id').onRef('contacts.id', '=', 'conversations.contact_id'),
  );
export const withContact = (scope: TenantScope) => withContactJoined(scope.selectFrom('conversations'));

/** What a conversation search looks for in its contacts: the name, and the phone's digits when it has any. */
const conversationSearches = (filter: ConversationFilter & { search: string }) =>
  // A search of digits alone looks for the same fragment in both: one search of two columns, which
  // SQLite's FTS table answers in one match instead of two.
  filter.searchDigits === filter.search
    ? [{ columns: ['name_search', 'phone_digits'] as SearchColumn[], fragment: filter.search }]
    : [
        { columns: ['name_search'] as SearchColumn[], fragment: filter.search },
        ...(filter.searchDigits ? [{ columns: ['phone_digits'] as SearchColumn[], fragment: filter.searchDigits }] : []),
      ];

/** A search's terms (bindSearch): what its statement binds for each of conversationSearches. */
export const conversationSearchTerms = (db: Executor, filter: ConversationFilter & { search: string }) =>
  conversationSearches(filter).map(({ columns, fragment }) => bindSearch(db, columns, fragment));

/** The contacts these terms match (from the rows the FTS table finds, on SQLite, when it finds them all). */
export const contactsMatching = (scope: TenantScope, terms: SearchTerm[]) =>
  (foundBySearchTable(scope.db, terms) ? scope.selectFromFound('contacts') : scope.selectFrom('contacts')).where(() => contactMatches(scope.db, terms));

/** The contacts a search matches. */
const searchedContacts = (scope: TenantScope, filter: ConversationFilter & { search: string }) =>
  contactsMatching(scope, conversationSearchTerms(scope.db, filter));

/**
 * How the conversations of the matching contacts are found:
 * - `given`: the contacts' ids were looked up first and are passed as a list;
 * - `probe`: from the contacts, one probe of `conversations_contact_idx` each (a count, a rare
 *   search's rows);
 * - `walk`: newest first along an activity index, keeping the conversations whose contact is among
 *   the matches (found once and hashed: dialect.checkedAgainst), until the page is full (a common
 *   search's page).
 */
export type Reach = { by: 'given'; contactIds: string[] | string } | { by: 'probe' | 'walk' };

/**
 * The conversations whose `column` is each of `outer`'s ids, as a `CROSS JOIN`, which SQLite never
 * reorders: it loops over the ids and looks each one up, by the primary key (`id`) or in
 * `conversations_contact_idx` (`contact_id`, named with `INDEXED BY`: the activity index covers
 * `contact_id` too, and with sampled statistics SQLite took a scan of the account's range of it
 * for cheaper). Left to choose, it walked the account's whole activity index and checked every
 * entry against the ids, for it cannot estimate how many rows a JSON list, an FTS match or a page
 * subquery holds. Postgres plans the same join from its estimates.
 */
const conversationsOfEach = <A extends string>(scope: TenantScope, outer: AliasedExpression<{ id: string }, A>, column: 'id' | 'contact_id') => {
  const conversations =
    column === 'contact_id' && dialectOf(scope.db).steeredPlans ? (sql`conversations indexed by conversations_contact_idx` as never) : 'conversations';
  return scope.db
    .selectFrom(outer as AliasedExpression<{ id: string }, 'outer'>)
    .crossJoin(conversations as 'conversations')
    .where(sql.ref('conversations.account_id'), '=', scope.accountId)
    .whereRef(`conversations.${column}`, '=', 'outer.id') as unknown as ConversationsQuery;
};

/**
 * The conversations whose `column` is one of the ids of `list` (boundList: a list looked up
 * before): Postgres binds them as an array (`isOneOf`), SQLite loops over them as a JSON list
 * (conversationsOfEach).
 */
const conversationsWith = (scope: TenantScope, column: 'id' | 'contact_id', list: string[] | string): ConversationsQuery =>
  dialectOf(scope.db).steeredPlans
    ? conversationsOfEach(scope, sql<{ id: string }>`(select value as id from json_each(${list}))`.as('outer'), column)
    : scope.selectFrom('conversations').where(() => dialectOf(scope.db).isOneOf(`conversations.${column}`, list));

/**
 * The conversations a filter selects, from `conversations` (and the matching contacts' ids): a
 * search is a condition on the contact, so counting never joins the contacts' rows.
 */
export const matching = (scope: TenantScope, filter: ConversationFilter, reach: Reach) => {
  const dialect = dialectOf(scope.db);
  const contacts = (search: string) => searchedContacts(scope, { ...filter, search }).select('contacts.id');
  let query: ConversationsQuery;
  if (reach.by === 'given') {
    query = conversationsWith(scope, 'contact_id', reach.contactIds);
  } else if (!filter.search) {
    query = scope.selectFrom('conversations');
  } else if (reach.by === 'probe') {
    query = dialect.steeredPlans
      ? conversationsOfEach(scope, contacts(filter.search).as('outer'), 'contact_id')
      : scope.selectFrom('conversations').where('conversations.contact_id', 'in', contacts(filter.search));
  } else {
    query = scope.selectFrom('conversations').where(dialect.checkedAgainst('conversations.contact_id', contacts(filter.search)));
  }
  if (filter.status) query = query.where('conversations.status', '=', filter.status);
  if (filter.platform) query = query.where('conversations.platform', '=', filter.platform);
  return query;
};

/**
 * A page of a search is found by walking the activity index when that reads fewer entries than
 * sorting the matches costs: the walk reads about (offset + limit) × selected ÷ matches index
 * entries, sorting reads every match's row, which costs about 14 entries' worth; so it walks when
 * (offset + limit) × selected ≤ 14 × matches². bench/README.md ("Indexes and query plans") has
 * the measurements behind the constant.
 */
export const WALK_WHEN_ENTRIES_PER_MATCH_SQUARED = 14;

export type Page = { limit: number; offset: number };

/** The rule of WALK_WHEN_ENTRIES_PER_MATCH_SQUARED: walking to `page` is cheaper than sorting the `total` matches among `selected`. */
export const walkIsCheaper = (page: Page, selected: number, total: number) =>
  (page.offset + page.limit) * selected <= WALK_WHEN_ENTRIES_PER_MATCH_SQUARED * total * total;

/**
 * The same rule evaluated by the database, as the walk's LIMIT: `page.limit` when walking is
 * cheaper, else 0. A LIMIT of 0 ends the query before its first row on both databases, where a
 * false condition in WHERE is still checked on every entry of the walk.
 */
export const walkLimit = (db: Executor, page: { reach: number; limit: number }, selected: Expression<number>, total: Expression<number>) => {
  const { integer } = dialectOf(db);
  const cheaper = sql`${integer(page.reach)} * ${selected} <= ${sql.lit(WALK_WHEN_ENTRIES_PER_MATCH_SQUARED)} * ${total} * ${total}`;
  return sql`case when ${cheaper} then ${integer(page.limit)} else 0 end`;
};

/** The offset and limit of a page as walkLimit takes them. */
export const reachOf = (page: Page) => ({ reach: page.offset + page.limit, limit: page.limit });

/**
 * What a conversation is read with: its columns but the search copy of its contact's name
 * (migration 0008), and its contact's name and phone.
 */
export const columns = [
  'conversations.account_id',
  'conversations.id',
  'conversations.contact_id',
  'conversations.platform',
  'conversations.channel_id',
  'conversations.status',
  'conversations.message_count',
  'conversations.last_message_content',
  'conversations.last_message_at',
  'conversations.last_activity_at',
  'conversations.event_sequence',
  'conversations.created_at',
  'conversations.updated_at',
  'contacts.name as contact_name',
  'contacts.phone as contact_phone',
] as const;
type ColumnOf<T> = T extends `conversations.${infer C}` ? C : never;
// A column of ConversationRow missing above fails to compile here.
const everyColumnRead: Record<Exclude<keyof ConversationRow, ColumnOf<(typeof columns)[number]>>, never> = {};
void everyColumnRead;

/** The exact number of conversations a filter selects, counted (a search). */
export const countMatching = (scope: TenantScope, filter: ConversationFilter, reach: Reach) =>
  matching(scope, filter, reach)
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .execute()
    .then((rows) => Number(rows[0]?.total ?? 0));

/**
 * Which of a status and a platform filter a statement compiled once per shape (preparedByShape)
 * has, and the values it binds for them (undefined: not in its shape).
 */
export type FilterShape = { status: boolean; platform: boolean };
export type FilterValues = { accountId: string; status: ConversationRow['status'] | undefined; platform: ConversationRow['platform'] | undefined };
export const filterShape = (filter: ConversationFilter): FilterShape => ({ status: Boolean(filter.status), platform: Boolean(filter.platform) });
export const filterValues = (scope: TenantScope, filter: ConversationFilter): FilterValues => ({
  accountId: scope.accountId,
  status: filter.status,
  platform: filter.platform,
});
/** The filter a statement of this shape is built for, from its values (placeholders while it is built). */
export const filterOf = (shape: FilterShape, values: FilterValues): ConversationFilter => ({
  status: shape.status ? values.status : undefined,
  platform: shape.platform ? values.platform : undefined,
});

/**
 * The page of a list without a search, newest activity first along the activity indexes (pageOf),
 * compiled once per shape: Kysely built it at every poll of an inbox.
 */
export const listPageQuery = preparedByShape((db: Executor, shape: FilterShape, values: FilterValues & Page) => {
  const scope = new TenantScope(db, values.accountId);
  return pageOf(scope, matching(scope, filterOf(shape, values), { by: 'walk' }), 'activity', values);
});

/**
 * The conversations (with their contacts) whose ids an array expression holds: the LATERAL side of
 * the Postgres statements that find a page's ids and its rows at once (searchPage,
 * trigramSearchQuery). `id = any(array)` is planned as primary-key probes whatever the planner
 * guesses of the array; a join on the walk's rows instead was planned from its guess of how many
 * the walk yields, and for a condition it cannot estimate (`strpos(…) > 0`) that was a hash join
 * over every conversation.
 */
export const rowsWithIdsIn = (scope: TenantScope, ids: Expression<unknown>) =>
  withContact(scope).select(columns).where(sql<SqlBool>`conversations.id = any(${ids})`);

/**
 * A page of the conversations a query selects, as a list shows it: their ids in the order
 * (`sorted`: SQLite sorts the matches rather than walk an activity index for them), limited, then
 * only those rows joined to their contacts.
 */
export const pageOf = (scope: TenantScope, conversations: ConversationsQuery, order: 'activity' | 'sorted', page: { limit: number; offset: number }) => {
  const ids = conversations
    .select('conversations.id')
    // `+column` keeps SQLite from answering the order from an activity index: it sorts the matches.
    .orderBy(order === 'sorted' && dialectOf(scope.db).steeredPlans ? sql`+conversations.last_activity_at` : sql.ref('conversations.last_activity_at'), 'desc')
    .orderBy('conversations.id', 'desc')
    .limit(page.limit)
    .offset(page.offset);
  return withContactJoined(conversationsOfEach(scope, ids.as('outer'), 'id'))
    .select(columns)
    .orderBy('conversations.last_activity_at', 'desc')
    .orderBy('conversations.id', 'desc');
};

/** Conversations by id, with their contacts, latest activity first (a page whose ids are known). */
export const rowsWithIds = async (scope: TenantScope, ids: readonly string[]): Promise<ConversationWithContact[]> => {
  if (ids.length === 0) return [];
  return (await rowsWithIdsQuery(scope, scope.accountId, dialectOf(scope.db).boundList(ids))).rows as ConversationWithContact[];
};

/** rowsWithIds' statement, compiled once: the ids are one bound list (boundList). */
const rowsWithIdsQuery = prepared((db: Executor, accountId: string, ids: string[] | string) =>
  withContactJoined(conversationsWith(new TenantScope(db, accountId), 'id', ids))
    .select(columns)
    .orderBy('conversations.last_activity_at', 'desc')
    .orderBy('conversations.id', 'desc'),
);
