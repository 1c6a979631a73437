import { type AliasedExpression, type Expression, type SelectQueryBuilder, sql } from 'kysely';
import type { Dialect } from '../../db/dialect.js';
import type { Database } from '../../db/schema.js';
import {
  type SearchColumn,
  type SearchTerm,
  bindSearch,
  contactMatches,
  foundBySearchTable,
} from '../contact-search.js';
import type { NoSelection, TenantScope } from '../tenant.js';
import { type ConversationFilter, whereFiltered } from './filter.js';
import type { ConversationRow, Page } from './types.js';

/** The pieces the list plans share: a page's rows with their contacts, and a search's contacts. */
export type ConversationsQuery = SelectQueryBuilder<Database, 'conversations', NoSelection>;

const withContactJoined = (conversations: ConversationsQuery) =>
  conversations.innerJoin('contacts', (join) =>
    join
      .onRef('contacts.account_id', '=', 'conversations.account_id')
      .onRef('contacts.id', '=', 'conversations.contact_id'),
  );
export const withContact = (scope: TenantScope) => withContactJoined(scope.selectFrom('conversations'));

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

/**
 * The conversations whose `column` is each of `outer`'s ids, as a `CROSS JOIN`, which SQLite never
 * reorders: it loops over the ids and looks each up, by primary key or in `conversations_contact_idx`
 * (named: with sampled statistics SQLite took a scan of the account's activity index for cheaper).
 * Postgres plans the same join from its estimates.
 */
export const conversationsOfEach = <A extends string>(
  scope: TenantScope,
  outer: AliasedExpression<{ id: string }, A>,
  column: 'id' | 'contact_id',
) => {
  const conversations =
    column === 'contact_id' ? scope.dialect.indexedBy('conversations', 'conversations_contact_idx') : 'conversations';
  return scope.db
    .selectFrom(outer as AliasedExpression<{ id: string }, 'outer'>)
    .crossJoin(conversations as 'conversations')
    .where(sql.ref('conversations.account_id'), '=', scope.accountId)
    .whereRef(`conversations.${column}`, '=', 'outer.id') as unknown as ConversationsQuery;
};

/** The conversations whose `column` is one of the ids of a bound list (boundList). */
export const conversationsWith = (
  scope: TenantScope,
  column: 'id' | 'contact_id',
  list: string[] | string,
): ConversationsQuery => conversationsOfEach(scope, scope.dialect.idsIn(list).as('outer'), column);

/**
 * A page as a statement compiled once per shape takes it: its LIMIT a literal (SQLite re-prepares a
 * statement whose LIMIT is bound at every execution) and an OFFSET only past the first page (with an
 * OFFSET it cannot see, Postgres plans the statement at every execution rather than keep a generic plan).
 */
export type PageShape = { limit: number; deep: boolean };
export const pageShape = (page: Page): PageShape => ({ limit: page.limit, deep: page.offset > 0 });
/** The page's bound offset: undefined on a first page (not a parameter of its shape). */
export const offsetOf = (page: Page): number | undefined => (page.offset > 0 ? page.offset : undefined);

/** A query of ids limited to the page (PageShape). */
// biome-ignore lint/suspicious/noExplicitAny: any select query.
export const limitedTo = <Q extends SelectQueryBuilder<any, any, any>>(
  query: Q,
  shape: PageShape,
  offset: number | undefined,
): Q => {
  const limited = query.limit(sql.lit(shape.limit)) as Q;
  return shape.deep ? (limited.offset(offset as number) as Q) : limited;
};

/**
 * A page of the conversations a query selects, latest activity first: their ids (`sorted`: the
 * matches sorted rather than an activity index walked), then only those rows joined to their
 * contacts.
 */
export const pageOf = (
  scope: TenantScope,
  conversations: ConversationsQuery,
  order: 'activity' | 'sorted',
  shape: PageShape,
  offset: number | undefined,
) => {
  const activity =
    order === 'sorted'
      ? scope.dialect.unindexed('conversations.last_activity_at')
      : sql.ref('conversations.last_activity_at');
  const ids = limitedTo(
    conversations.select('conversations.id').orderBy(activity, 'desc').orderBy('conversations.id', 'desc'),
    shape,
    offset,
  );
  return withContactJoined(conversationsOfEach(scope, ids.as('outer'), 'id'))
    .select(columns)
    .orderBy('conversations.last_activity_at', 'desc')
    .orderBy('conversations.id', 'desc');
};

/**
 * The conversations (with their contacts) whose ids a list expression holds (listFrom): the LATERAL
 * side of the Postgres statements that find a page's ids and its rows at once. `id = any(array)` is
 * planned as primary-key probes whatever the planner guesses of the array.
 */
export const rowsWithIdsIn = (scope: TenantScope, ids: Expression<unknown>) =>
  withContact(scope).select(columns).where(scope.dialect.isInList('conversations.id', ids));

/** What a conversation search looks for in its contacts: the name, and the phone's digits when it has any. */
const conversationSearches = (filter: ConversationFilter & { search: string }) =>
  // Digits alone: one search of two columns, which SQLite's FTS table answers in one match.
  filter.searchDigits === filter.search
    ? [{ columns: ['name_search', 'phone_digits'] as SearchColumn[], fragment: filter.search }]
    : [
        { columns: ['name_search'] as SearchColumn[], fragment: filter.search },
        ...(filter.searchDigits
          ? [{ columns: ['phone_digits'] as SearchColumn[], fragment: filter.searchDigits }]
          : []),
      ];

/** A search's terms (bindSearch): what its statement binds for each of conversationSearches. */
export const conversationSearchTerms = (dialect: Dialect, filter: ConversationFilter & { search: string }) =>
  conversationSearches(filter).map(({ columns, fragment }) => bindSearch(dialect, columns, fragment));

/** The contacts these terms match (from the rows the search tables find, where they find them all). */
export const contactsMatching = (scope: TenantScope, terms: SearchTerm[]) =>
  (foundBySearchTable(scope.dialect, terms) ? scope.selectFromFound('contacts') : scope.selectFrom('contacts')).where(
    () => contactMatches(scope.dialect, terms),
  );

/** The conversations of a search's contacts, one probe of `conversations_contact_idx` per contact, filtered. */
export const conversationsOfContacts = (scope: TenantScope, filter: ConversationFilter & { search: string }) => {
  const contacts = contactsMatching(scope, conversationSearchTerms(scope.dialect, filter)).select('contacts.id');
  return whereFiltered(conversationsOfEach(scope, contacts.as('outer'), 'contact_id'), 'conversations', filter);
};

/** The number of rows a query of conversations selects. */
export const countOf = async (query: ConversationsQuery): Promise<number> => {
  const row = await query.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirst();
  return Number(row?.total ?? 0);
};

/** The account's conversations read through `index` (where plans are steered: INDEXED BY). */
export const conversationsThrough = (scope: TenantScope, index: string): ConversationsQuery =>
  scope.db
    .selectFrom(scope.dialect.indexedBy('conversations', index) as unknown as 'conversations')
    .where(sql.ref('conversations.account_id'), '=', scope.accountId) as unknown as ConversationsQuery;
