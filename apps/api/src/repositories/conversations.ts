import { type AliasedExpression, type Expression, type SelectQueryBuilder, type Selectable, type SqlBool, type Updateable, sql } from 'kysely';
import { dialectOf } from '../db/dialect.js';
import type { ConversationTable, Database } from '../db/schema.js';
import { type SearchColumn, type SearchTerm, contactMatches, foundBySearchTable, searchTerm } from './contact-search.js';
import { prepared, preparedByShape } from './prepared.js';
import { type Executor, TenantScope } from './tenant.js';

/** A conversation as the API writes and reads it (without the search copy of its contact's name, migration 0008). */
export type ConversationRow = Omit<Selectable<ConversationTable>, 'contact_name_search'>;
/** A conversation with the summary of its contact. */
export type ConversationWithContact = ConversationRow & { contact_name: string | null; contact_phone: string };

export interface ConversationFilter {
  status?: ConversationRow['status'] | undefined;
  platform?: ConversationRow['platform'] | undefined;
  /** Lower-cased search text. */
  search?: string | undefined;
  /** Digits of the search, when it holds any. */
  searchDigits?: string | undefined;
}

type ConversationsQuery = SelectQueryBuilder<Database, 'conversations', {}>;

const withContactJoined = (conversations: ConversationsQuery) =>
  conversations.innerJoin('contacts', (join) =>
    join.onRef('contacts.account_id', '=', 'conversations.account_id').onRef('contacts.id', '=', 'conversations.contact_id'),
  );
const withContact = (scope: TenantScope) => withContactJoined(scope.selectFrom('conversations'));

/** What a conversation search looks for in its contacts: the name, and the phone's digits when it has any. */
const contactSearches = (filter: ConversationFilter & { search: string }) =>
  // A search of digits alone looks for the same fragment in both: one search of two columns, which
  // SQLite's FTS table answers in one match (0.46 ms at 250,000 contacts, where two took 0.77).
  filter.searchDigits === filter.search
    ? [{ columns: ['name_search', 'phone_digits'] as SearchColumn[], fragment: filter.search }]
    : [
        { columns: ['name_search'] as SearchColumn[], fragment: filter.search },
        ...(filter.searchDigits ? [{ columns: ['phone_digits'] as SearchColumn[], fragment: filter.searchDigits }] : []),
      ];

/** A search's terms (searchTerm): what its statement binds for each of contactSearches. */
const searchTermsOf = (db: Executor, filter: ConversationFilter & { search: string }) =>
  contactSearches(filter).map(({ columns, fragment }) => searchTerm(db, columns, fragment));

/** The contacts these terms match (from the rows the FTS table finds, on SQLite, when it finds them all). */
const contactsMatching = (scope: TenantScope, terms: SearchTerm[]) =>
  (foundBySearchTable(scope.db, terms) ? scope.selectFromFound('contacts') : scope.selectFrom('contacts')).where(() => contactMatches(scope.db, terms));

/** The contacts a search matches. */
const searchedContacts = (scope: TenantScope, filter: ConversationFilter & { search: string }) => contactsMatching(scope, searchTermsOf(scope.db, filter));

/**
 * How the conversations of the matching contacts are found:
 * - `given`: the contacts' ids were looked up first and are passed as a list;
 * - `probe`: from the contacts, one probe of `conversations_contact_idx` each (a count, a rare
 *   search's rows);
 * - `walk`: newest first along an activity index, keeping the conversations whose contact is among
 *   the matches, until the page is full (a common search's page). The matches are found once and
 *   hashed: SQLite's `+contact_id` keeps it from starting at the contacts instead, Postgres'
 *   `or false` keeps the planner from turning the subquery into a join (it is folded away only
 *   after that choice), so it checks each index entry against a hashed subplan.
 */
type Reach = { by: 'given'; contactIds: string[] | string } | { by: 'probe' | 'walk' };

/**
 * The conversations whose `column` is each of `outer`'s ids, as a `CROSS JOIN`, which SQLite never
 * reorders: it loops over the ids and looks each one up, by the primary key (`id`) or in
 * `conversations_contact_idx` (`contact_id`, named with `INDEXED BY`: the activity index covers
 * `contact_id` too, and with sampled statistics SQLite took a scan of the account's range of it
 * for cheaper). Left to choose, it walked the account's whole activity index and checked every
 * entry against the ids, for it cannot estimate how many rows a JSON list, an FTS match or a page
 * subquery holds: 23 ms for one phone number's 3 conversations, 70 ms for a page of 20. Postgres
 * plans the same join from its estimates.
 */
const conversationsOfEach = <A extends string>(scope: TenantScope, outer: AliasedExpression<{ id: string }, A>, column: 'id' | 'contact_id') => {
  const conversations = column === 'contact_id' && dialectOf(scope.db).steeredPlans ? (sql`conversations indexed by conversations_contact_idx` as never) : 'conversations';
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
const matching = (scope: TenantScope, filter: ConversationFilter, reach: Reach) => {
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
 * A search first reads the contacts it matches (searchSummary), and their ids when they are no
 * more than this many (a phone number, a rare name): the page (and a narrowed count) then take
 * them as a list, and the search itself runs once.
 */
const FEW_CONTACTS = 100;

/**
 * A page of a search is found by walking the activity index when that reads fewer entries than
 * sorting the matches costs: the walk reads about (offset + limit) × selected ÷ matches entries
 * (0.11 µs each on SQLite, the index alone), sorting reads every match's row (about 1.5 µs each):
 * so it walks when (offset + limit) × selected ≤ 14 × matches². Measured on the 200k set: `tin`
 * (4,224 matches) walks in 0.7 ms where sorting takes 7.8 ms, `olga` (4 matches) sorts in 0.1 ms
 * where the walk takes 22 ms.
 */
const WALK_WHEN_ENTRIES_PER_MATCH_SQUARED = 14;

type Page = { limit: number; offset: number };

/** The rule of WALK_WHEN_ENTRIES_PER_MATCH_SQUARED: walking to `page` is cheaper than sorting the `total` matches among `selected`. */
const walkIsCheaper = (page: Page, selected: number, total: number) => (page.offset + page.limit) * selected <= WALK_WHEN_ENTRIES_PER_MATCH_SQUARED * total * total;

/**
 * The same rule evaluated by the database, as the walk's LIMIT: `page.limit` when walking is
 * cheaper, else 0. A LIMIT of 0 ends the query before its first row on both databases, where a
 * false condition in WHERE is still checked on every entry of the walk.
 */
const walkLimit = (db: Executor, page: { reach: number; limit: number }, selected: Expression<number>, total: Expression<number>) => {
  const { integer } = dialectOf(db);
  const cheaper = sql`${integer(page.reach)} * ${selected} <= ${sql.lit(WALK_WHEN_ENTRIES_PER_MATCH_SQUARED)} * ${total} * ${total}`;
  return sql`case when ${cheaper} then ${integer(page.limit)} else 0 end`;
};

/** The offset and limit of a page as walkLimit takes them. */
const reachOf = (page: Page) => ({ reach: page.offset + page.limit, limit: page.limit });

/**
 * What a conversation is read with: its columns but the search copy of its contact's name
 * (migration 0008), and its contact's name and phone.
 */
const columns = [
  'conversations.account_id',
  'conversations.id',
  'conversations.contact_id',
  'conversations.platform',
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
const countMatching = (scope: TenantScope, filter: ConversationFilter, reach: Reach) =>
  matching(scope, filter, reach).select((eb) => eb.fn.countAll<number>().as('total')).execute().then((rows) =>
    Number(rows[0]?.total ?? 0),
  );

/**
 * The exact number of conversations of a status and/or platform filter, from the counts the
 * triggers of migration 0006 keep per account, status and platform: at most nine rows to add up.
 */
const countersTotal = (scope: TenantScope, filter: ConversationFilter) => {
  let query = scope.selectFrom('conversation_counts');
  if (filter.status) query = query.where('conversation_counts.status', '=', filter.status);
  if (filter.platform) query = query.where('conversation_counts.platform', '=', filter.platform);
  return query.select((eb) => eb.fn.coalesce(eb.fn.sum<number>('conversation_counts.count'), sql.lit(0)).as('total'));
};

/**
 * Which of a status and a platform filter a statement compiled once per shape (preparedByShape)
 * has, and the values it binds for them (undefined: not in its shape).
 */
type FilterShape = { status: boolean; platform: boolean };
type FilterValues = { accountId: string; status: ConversationRow['status'] | undefined; platform: ConversationRow['platform'] | undefined };
const filterShape = (filter: ConversationFilter): FilterShape => ({ status: Boolean(filter.status), platform: Boolean(filter.platform) });
const filterValues = (scope: TenantScope, filter: ConversationFilter): FilterValues => ({ accountId: scope.accountId, status: filter.status, platform: filter.platform });
/** The filter a statement of this shape is built for, from its values (placeholders while it is built). */
const filterOf = (shape: FilterShape, values: FilterValues): ConversationFilter => ({
  status: shape.status ? values.status : undefined,
  platform: shape.platform ? values.platform : undefined,
});

/** countersTotal, compiled once per shape. */
const countersQuery = preparedByShape((db: Executor, shape: FilterShape, values: FilterValues) => countersTotal(new TenantScope(db, values.accountId), filterOf(shape, values)));

/** countersTotal, run. */
const countFromCounters = (scope: TenantScope, filter: ConversationFilter) =>
  countersQuery(scope, filterShape(filter), filterValues(scope, filter)).then((rows) => Number(rows[0]?.total ?? 0));

/**
 * The page of a list without a search, newest activity first along the activity indexes (pageOf),
 * compiled once per shape: Kysely built it at every poll of an inbox.
 */
const listPageQuery = preparedByShape((db: Executor, shape: FilterShape, values: FilterValues & Page) => {
  const scope = new TenantScope(db, values.accountId);
  return pageOf(scope, matching(scope, filterOf(shape, values), { by: 'walk' }), 'activity', values);
});

/**
 * The conversations (with their contacts) whose ids an array expression holds: the LATERAL side of
 * the Postgres statements that find a page's ids and its rows at once (searchPage,
 * trigramSearchQuery). `id = any(array)` is planned as primary-key probes whatever the planner
 * guesses of the array; a join on the walk's rows instead was planned from its guess of how many
 * the walk yields, and for a condition it cannot estimate (`strpos(…) > 0`, a third of the rows)
 * that was a hash join over every conversation: 135 ms where the probes take 0.3.
 */
const rowsWithIdsIn = (scope: TenantScope, ids: Expression<unknown>) =>
  withContact(scope).select(columns).where(sql<SqlBool>`conversations.id = any(${ids})`);

/**
 * What a search's contacts hold, in one read of each matching contact: how many they are, how
 * many conversations they have (the sum of their `conversation_count`, kept by the triggers of
 * migration 0007: the exact total of a search without a status or platform filter, where counting
 * probed each contact's conversations), and their ids when they are at most FEW_CONTACTS.
 *
 * Given the `page` of a search without a status or platform filter, the same statement also walks
 * to that page when walking is the cheaper way (the rule of WALK_WHEN_ENTRIES_PER_MATCH_SQUARED,
 * which the database evaluates once, as the walk's LIMIT: when it is false the walk does not start),
 * so the matching contacts are read once where a second statement found them again (for `tin`,
 * 0.4 ms on SQLite and 0.8 ms on Postgres). `walked` is then the page's ids. On Postgres the
 * statement goes on to the page's rows itself (searchPage): `page` is then the page when it was
 * found (the walk, or at most FEW_CONTACTS contacts' conversations sorted), one round trip where
 * there were two.
 */
const searchSummary = async (scope: TenantScope, filter: ConversationFilter & { search: string }, page?: Page) => {
  const terms = searchTermsOf(scope.db, filter);
  const shape: SummaryShape = { terms: terms.map(({ columns, indexed }) => ({ columns, indexed })), status: Boolean(filter.status), platform: Boolean(filter.platform), paged: Boolean(page) };
  const values: SummaryValues = {
    accountId: scope.accountId,
    name: terms[0]?.operand,
    digits: terms[1]?.operand,
    // The filters are the statement's only when it finds a page (its `selected` counts them).
    status: page ? filter.status : undefined,
    platform: page ? filter.platform : undefined,
    reach: page ? reachOf(page).reach : undefined,
    limit: page?.limit,
    offset: page?.offset,
  };
  const found = await searchSummaryQuery(scope, shape, values);
  if (dialectOf(scope.db).lateralJoins && page) {
    const rows = found as unknown as (ConversationWithContact & { contacts: unknown; conversations: unknown; selected: unknown })[];
    const first = rows[0];
    const [contacts, conversations, selectedCount] = [Number(first?.contacts ?? 0), Number(first?.conversations ?? 0), Number(first?.selected ?? 0)];
    const paged = contacts <= FEW_CONTACTS || walkIsCheaper(page, selectedCount, conversations);
    const pageRows = rows.filter((row) => row.id !== null).map(({ contacts: _, conversations: __, selected: ___, ...row }) => row as ConversationWithContact);
    return { contacts, conversations, ids: null, selected: selectedCount, walked: undefined, page: paged ? pageRows : undefined };
  }
  const row = found[0] as { contacts?: unknown; conversations?: unknown; ids?: unknown; selected?: unknown; walked?: unknown } | undefined;
  const list = (value: unknown) => (typeof value === 'string' ? (JSON.parse(value) as string[]) : ((value as string[] | null | undefined) ?? null));
  const conversations = Number(row?.conversations ?? 0);
  const selectedCount = Number(row?.selected ?? 0);
  const walkedIds = page && walkIsCheaper(page, selectedCount, conversations) ? (list(row?.walked) ?? []) : undefined;
  return { contacts: Number(row?.contacts ?? 0), conversations, ids: list(row?.ids), selected: page ? selectedCount : undefined, walked: walkedIds, page: undefined };
};

/** What decides the SQL of searchSummary's statement: its search terms' columns and whether each is indexed, which filters it has, whether it finds a page. */
interface SummaryShape {
  terms: Omit<SearchTerm, 'operand'>[];
  status: boolean;
  platform: boolean;
  paged: boolean;
}

/** The values searchSummary's statement binds (undefined: not in its shape). */
type SummaryValues = {
  accountId: string;
  /** The operand (searchTerm) of the name's term, and of the phone digits' when the search has digits. */
  name: string | undefined;
  digits: string | undefined;
  status: ConversationRow['status'] | undefined;
  platform: ConversationRow['platform'] | undefined;
  /** The page's offset + limit, its limit and its offset, when it finds a page. */
  reach: number | undefined;
  limit: number | undefined;
  offset: number | undefined;
};

/**
 * searchSummary's statement, built and compiled once per shape (preparedByShape): Kysely's build
 * and compile of it per request was most of the difference in the server's work between a search
 * by phone digits and a three-character search (7.3 and 5.2 million instructions a request).
 */
const searchSummaryQuery = preparedByShape((db: Executor, shape: SummaryShape, values: SummaryValues) => {
  const scope = new TenantScope(db, values.accountId);
  const dialect = dialectOf(db);
  const filter = filterOf(shape, values);
  // The conversations the search narrows, without it: the filter's counters (countFromCounters).
  const selected = sql<number>`(${countersTotal(scope, filter)})`;
  const page = shape.paged ? { reach: values.reach as number, limit: values.limit as number, offset: values.offset as number } : undefined;
  const walked = (page: { reach: number; limit: number; offset: number }) => {
    const total = sql<number>`(select coalesce(sum(conversation_count), 0) from matched)`;
    const reach = dialect.checkedAgainst('c.contact_id', sql`select id from matched`);
    return sql<string[] | string | null>`(select ${dialect.listOf('w.id')} from (
      select c.id from conversations c where c.account_id = ${scope.accountId} and ${reach}
      order by c.last_activity_at desc, c.id desc limit ${walkLimit(db, page, selected, total)} offset ${dialect.planAlike(page.offset, 'bigint')}) w)`;
  };
  const terms = shape.terms.map((term, i) => ({ ...term, operand: (i === 0 ? values.name : values.digits) as string }));
  const contacts = contactsMatching(scope, terms);
  const summary = db
    .with(
      (cte) => cte('matched').materialized(),
      () => contacts.select(['contacts.id', 'contacts.conversation_count']),
    )
    .selectFrom('matched')
    .select((eb) => [
      eb.fn.countAll<number>().as('contacts'),
      eb.fn.sum<number>('matched.conversation_count').as('conversations'),
      sql<string[] | string | null>`case when count(*) <= ${sql.lit(FEW_CONTACTS)} then ${dialect.listOf('matched.id')} end`.as('ids'),
      ...(page ? [selected.as('selected'), walked(page).as('walked')] : []),
    ]);
  return dialect.lateralJoins && page ? searchPage(scope, summary, page) : summary;
});

/**
 * searchSummary's statement on Postgres when it has a page to find: the summary (`summary`, one
 * row), then through a LATERAL join the page's rows, by primary key from the page's ids: the walk's
 * (`walked`) or else, for at most FEW_CONTACTS contacts (`ids`), their conversations sorted (the
 * conversations of each from `conversations_contact_idx`). One row per conversation of the page,
 * each with the summary's counts; one row of the counts and nulls when there is no page (no
 * match, an offset past the end, or many contacts where sorting is the cheaper way).
 */
const searchPage = (scope: TenantScope, summary: { as(alias: 'summary'): unknown }, page: { limit: number; offset: number }) => {
  const given = sql<string[] | null>`(select array_agg(g.id) from (
      select c.id from conversations c where c.account_id = ${scope.accountId} and c.contact_id = any(summary.ids)
      order by c.last_activity_at desc, c.id desc limit ${page.limit} offset ${dialectOf(scope.db).planAlike(page.offset, 'bigint')}) g)`;
  return scope.db
    .selectFrom(sql`(${summary})`.as('summary'))
    .leftJoinLateral(() => rowsWithIdsIn(scope, sql`coalesce(summary.walked, ${given})`).as('r'), (join) => join.onTrue())
    .select([sql<number>`summary.contacts`.as('contacts'), sql<number>`summary.conversations`.as('conversations'), sql<number>`summary.selected`.as('selected')])
    .selectAll('r' as never)
    .orderBy(sql`r.last_activity_at`, 'desc')
    .orderBy(sql`r.id`, 'desc');
};

/**
 * The page of the conversations of a few contacts (their ids from searchSummary, as boundList binds them), latest activity
 * first, as `list()`'s sorted page of a `given` reach: the contacts' conversations from
 * `conversations_contact_idx`, sorted, then the page's rows by primary key. Compiled once per
 * shape (preparedByShape): on SQLite, where the summary does not find the page itself, a phone
 * search built this statement with Kysely at every request.
 */
const givenPage = async (scope: TenantScope, filter: ConversationFilter, contactIds: string[] | string, page: Page) =>
  (await givenPageQuery(scope, filterShape(filter), { ...filterValues(scope, filter), contactIds, limit: page.limit, offset: page.offset })) as ConversationWithContact[];

const givenPageQuery = preparedByShape((db: Executor, shape: FilterShape, values: FilterValues & Page & { contactIds: string[] | string }) => {
  const scope = new TenantScope(db, values.accountId);
  return pageOf(scope, matching(scope, filterOf(shape, values), { by: 'given', contactIds: values.contactIds }), 'sorted', values);
});

/**
 * A page of the conversations a query selects, as a list shows it: their ids in the order
 * (`sorted`: SQLite sorts the matches rather than walk an activity index for them), limited, then
 * only those rows joined to their contacts.
 */
const pageOf = (scope: TenantScope, conversations: ConversationsQuery, order: 'activity' | 'sorted', page: { limit: number; offset: number }) => {
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

/** A search `fragment` whose total `conversation_name_trigrams` keeps: three characters, the name alone (no digits). */
const isTrigramSearch = (filter: ConversationFilter): filter is ConversationFilter & { search: string } =>
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
const trigramSearch = async (
  scope: TenantScope,
  search: string,
  page: Page,
): Promise<{ total: number; rows: ConversationWithContact[] | undefined }> => {
  const { reach, limit } = reachOf(page);
  const { rows } = await trigramSearchQuery(scope, scope.accountId, search, reach, limit, page.offset);
  const found = rows as (ConversationWithContact & { total: number; selected: number; walked?: string | null })[];
  const count = Number(found[0]?.total ?? 0);
  const walks = walkIsCheaper(page, Number(found[0]?.selected ?? 0), count);
  if (!dialectOf(scope.db).lateralJoins) return { total: count, rows: walks ? await rowsWithIds(scope, JSON.parse(found[0]?.walked ?? '[]') as string[]) : undefined };
  const pageRows = found.filter((row) => row.id !== null).map(({ total: _, selected: __, ...row }) => row as ConversationWithContact);
  return { total: count, rows: walks ? pageRows : undefined };
};

/**
 * trigramSearch's statement, built and compiled once (prepared): Postgres' one row per
 * conversation of the page, each with the total (one row of nulls but the total when the page is
 * empty or not walked); SQLite's one row of the total and the page's ids as a JSON list.
 */
const trigramSearchQuery = prepared((db: Executor, accountId: string, trigram: string, reach: number, limit: number, offset: number) => {
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
      .leftJoinLateral(() => rowsWithIdsIn(scope, sql.ref('t.walked')).as('r'), (join) => join.onTrue())
      .select([sql<number>`t.total`.as('total'), sql<number>`t.selected`.as('selected')])
      .selectAll('r' as never)
      .orderBy(sql`r.last_activity_at`, 'desc')
      .orderBy(sql`r.id`, 'desc');
  }
  const ids = sql<string | null>`(select json_group_array(w.id) from (${walk(total, selected)}) w)`;
  return db.selectNoFrom([total.as('total'), selected.as('selected'), ids.as('walked')]);
});

/** Conversations by id, with their contacts, latest activity first (a page whose ids are known). */
const rowsWithIds = async (scope: TenantScope, ids: readonly string[]): Promise<ConversationWithContact[]> => {
  if (ids.length === 0) return [];
  return (await rowsWithIdsQuery(scope, scope.accountId, dialectOf(scope.db).boundList(ids))).rows as ConversationWithContact[];
};

/** rowsWithIds' statement, compiled once: the ids are one bound list (boundList). */
const rowsWithIdsQuery = prepared((db: Executor, accountId: string, ids: string[] | string) =>
  withContactJoined(conversationsWith(new TenantScope(db, accountId), 'id', ids)).select(columns).orderBy('conversations.last_activity_at', 'desc').orderBy('conversations.id', 'desc'),
);

const findByIdQuery = prepared((db: Executor, accountId: string, id: string) =>
  withContact(new TenantScope(db, accountId)).select(columns).where('conversations.id', '=', id),
);

export const conversationsRepository = {
  findById: async (scope: TenantScope, id: string): Promise<ConversationWithContact | undefined> =>
    (await findByIdQuery(scope, scope.accountId, id)).rows[0],

  /**
   * A page of conversations, latest activity first, and the exact number the filter selects.
   * The page's ids come from the indexes first and only those 20 rows are joined to their
   * contacts (a deep offset skips index entries, not joined rows).
   */
  async list(scope: TenantScope, filter: ConversationFilter, page: Page) {
    const rows = (reach: Reach, order: 'activity' | 'sorted') =>
      pageOf(scope, matching(scope, filter, reach), order, page).execute() as Promise<ConversationWithContact[]>;

    if (!filter.search) {
      const listPage = async () => (await listPageQuery(scope, filterShape(filter), { ...filterValues(scope, filter), limit: page.limit, offset: page.offset })) as ConversationWithContact[];
      if (dialectOf(scope.db).concurrentStatements) {
        const [found, total] = await Promise.all([listPage(), countFromCounters(scope, filter)]);
        return { rows: found, total };
      }
      const total = await countFromCounters(scope, filter);
      if (total <= page.offset) return { rows: [], total };
      return { rows: await listPage(), total };
    }

    if (isTrigramSearch(filter)) {
      const found = await trigramSearch(scope, filter.search, page);
      if (found.total <= page.offset) return { rows: [], total: found.total };
      if (found.rows) return { rows: found.rows, total: found.total };
    }
    const search = { ...filter, search: filter.search };
    // Without a status or platform filter the contacts' own counts are the exact total.
    const narrowed = Boolean(filter.status || filter.platform);
    const summary = await searchSummary(scope, search, narrowed ? undefined : page);
    if (summary.contacts === 0) return { rows: [], total: 0 };
    if (summary.page) return { rows: summary.page, total: summary.conversations };
    if (summary.walked) return { rows: await rowsWithIds(scope, summary.walked), total: summary.conversations };
    if (summary.ids) {
      // A few contacts' conversations: the page from their ids, sorted. Narrowed, a page that is
      // not full and not past the end tells the exact total by itself (offset + its rows), so the
      // count is only run when it cannot.
      const given = { by: 'given', contactIds: dialectOf(scope.db).boundList(summary.ids) } as const;
      if (!narrowed && summary.conversations <= page.offset) return { rows: [], total: summary.conversations };
      const found = await givenPage(scope, filter, given.contactIds, page);
      if (!narrowed) return { rows: found, total: summary.conversations };
      if (found.length < page.limit && (found.length > 0 || page.offset === 0)) return { rows: found, total: page.offset + found.length };
      return { rows: found, total: await countMatching(scope, filter, given) };
    }
    // Many contacts: the total, then the page by whichever of walking and sorting reads less.
    const [total, selected] = await Promise.all([
      narrowed ? countMatching(scope, filter, { by: 'probe' }) : summary.conversations,
      summary.selected ?? countFromCounters(scope, filter),
    ]);
    if (total <= page.offset) return { rows: [], total };
    return { rows: await (walkIsCheaper(page, selected, total) ? rows({ by: 'walk' }, 'activity') : rows({ by: 'probe' }, 'sorted')), total };
  },

  insert: (scope: TenantScope, row: Omit<ConversationRow, 'account_id'>) => scope.insert('conversations', row),

  update: (scope: TenantScope, id: string, patch: Updateable<ConversationTable>) =>
    scope.updateTable('conversations').set(patch).where('conversations.id', '=', id).execute(),

  /** Takes the conversation's next event sequence number (1, 2, …). */
  async nextEventSequence(scope: TenantScope, id: string): Promise<number> {
    const row = await scope
      .updateTable('conversations')
      .set((eb) => ({ event_sequence: eb('event_sequence', '+', 1) }))
      .where('conversations.id', '=', id)
      .returning('event_sequence')
      .executeTakeFirstOrThrow();
    return Number(row.event_sequence);
  },

  /** The contact's conversations on a platform that are not archived, latest activity first. */
  findOpenForContact: (scope: TenantScope, contactId: string, platform?: ConversationRow['platform']) => {
    let query = withContact(scope)
      .select(columns)
      .where('conversations.contact_id', '=', contactId)
      .where('conversations.status', '!=', 'archived');
    if (platform) query = query.where('conversations.platform', '=', platform);
    return query.orderBy('conversations.last_activity_at', 'desc').orderBy('conversations.id', 'desc').executeTakeFirst() as Promise<ConversationWithContact | undefined>;
  },

  /** Counts a new message and makes it the last one. */
  recordMessage: (scope: TenantScope, id: string, message: { content: string; at: string }) => messageRecorded(scope, id, message).execute(),

  /** Why a message could not be recorded: the conversation is archived, or not this account's. */
  async whyNotOpen(scope: TenantScope, id: string): Promise<'archived' | 'missing'> {
    const existing = await scope.selectFrom('conversations').select('conversations.status').where('conversations.id', '=', id).executeTakeFirst();
    return existing ? 'archived' : 'missing';
  },
};

/** The update that counts a new message and makes it the last one (not yet executed). */
export const messageRecorded = (scope: TenantScope, id: string, message: { content: string; at: string }) =>
  scope
    .updateTable('conversations')
    .set((eb) => {
      // Concurrent sends may reach the row out of their time order: the last message and the
      // times only ever move forward, so an older message never replaces a newer one.
      const newer = eb.or([eb('last_message_at', 'is', null), eb('last_message_at', '<=', message.at)]);
      const latest = (column: 'last_activity_at' | 'updated_at') => eb.case().when(column, '<=', message.at).then(message.at).else(eb.ref(column)).end();
      return {
        message_count: eb('message_count', '+', 1),
        last_message_content: eb.case().when(newer).then(message.content).else(eb.ref('last_message_content')).end(),
        last_message_at: eb.case().when(newer).then(message.at).else(eb.ref('last_message_at')).end(),
        last_activity_at: latest('last_activity_at'),
        updated_at: latest('updated_at'),
      };
    })
    .where('conversations.id', '=', id);
