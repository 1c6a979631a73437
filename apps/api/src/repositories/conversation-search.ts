import { sql } from 'kysely';
import { dialectOf } from '../db/dialect.js';
import type { SearchTerm } from './contact-search.js';
import { countersTotal } from './conversation-counters.js';
import {
  conversationSearchTerms,
  contactsMatching,
  matching,
  type Page,
  walkIsCheaper,
  walkLimit,
  reachOf,
  type FilterShape,
  type FilterValues,
  filterShape,
  filterValues,
  filterOf,
  rowsWithIdsIn,
  pageOf,
} from './conversation-queries.js';
import type { ConversationRow, ConversationWithContact, ConversationFilter } from './conversations.js';
import { preparedByShape } from './prepared.js';
import { type Executor, TenantScope } from './tenant.js';

/**
 * A conversation search: its contacts read once with their conversation counts (migration 0007),
 * then its page by walking the activity index or sorting the matches, whichever reads less. Kept
 * for the search targets (≥ 10× the reference, p99 < 50 ms at 32 connections), which a plain join
 * with `count(*)` misses (bench/README.md, twelfth pass).
 */

/**
 * A search first reads the contacts it matches (searchSummary), and their ids when they are no
 * more than this many (a phone number, a rare name): the page (and a narrowed count) then take
 * them as a list, and the search itself runs once.
 */
const FEW_CONTACTS = 100;

/**
 * What a search's contacts hold, in one read of each matching contact: how many they are, how
 * many conversations they have (the sum of their `conversation_count`, kept by the triggers of
 * migration 0007: the exact total of a search without a status or platform filter, where counting
 * probed each contact's conversations), and their ids when they are at most FEW_CONTACTS.
 *
 * Given the `page` of a search without a status or platform filter, the same statement also walks
 * to that page when walking is the cheaper way (the rule of WALK_WHEN_ENTRIES_PER_MATCH_SQUARED,
 * which the database evaluates once, as the walk's LIMIT: when it is false the walk does not start),
 * so the matching contacts are read once where a second statement found them again. `walked` is
 * then the page's ids. On Postgres the
 * statement goes on to the page's rows itself (searchPage): `page` is then the page when it was
 * found (the walk, or at most FEW_CONTACTS contacts' conversations sorted), one round trip where
 * there were two.
 */
export const searchSummary = async (scope: TenantScope, filter: ConversationFilter & { search: string }, page?: Page) => {
  const terms = conversationSearchTerms(scope.db, filter);
  const shape: SummaryShape = {
    terms: terms.map(({ columns, indexed }) => ({ columns, indexed })),
    status: Boolean(filter.status),
    platform: Boolean(filter.platform),
    paged: Boolean(page),
  };
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
  return {
    contacts: Number(row?.contacts ?? 0),
    conversations,
    ids: list(row?.ids),
    selected: page ? selectedCount : undefined,
    walked: walkedIds,
    page: undefined,
  };
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
  /** The operand (bindSearch) of the name's term, and of the phone digits' when the search has digits. */
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
export const searchPage = (scope: TenantScope, summary: { as(alias: 'summary'): unknown }, page: { limit: number; offset: number }) => {
  const given = sql<string[] | null>`(select array_agg(g.id) from (
      select c.id from conversations c where c.account_id = ${scope.accountId} and c.contact_id = any(summary.ids)
      order by c.last_activity_at desc, c.id desc limit ${page.limit} offset ${dialectOf(scope.db).planAlike(page.offset, 'bigint')}) g)`;
  return scope.db
    .selectFrom(sql`(${summary})`.as('summary'))
    .leftJoinLateral(
      () => rowsWithIdsIn(scope, sql`coalesce(summary.walked, ${given})`).as('r'),
      (join) => join.onTrue(),
    )
    .select([
      sql<number>`summary.contacts`.as('contacts'),
      sql<number>`summary.conversations`.as('conversations'),
      sql<number>`summary.selected`.as('selected'),
    ])
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
export const givenPage = async (scope: TenantScope, filter: ConversationFilter, contactIds: string[] | string, page: Page) =>
  (await givenPageQuery(scope, filterShape(filter), {
    ...filterValues(scope, filter),
    contactIds,
    limit: page.limit,
    offset: page.offset,
  })) as ConversationWithContact[];

const givenPageQuery = preparedByShape((db: Executor, shape: FilterShape, values: FilterValues & Page & { contactIds: string[] | string }) => {
  const scope = new TenantScope(db, values.accountId);
  return pageOf(scope, matching(scope, filterOf(shape, values), { by: 'given', contactIds: values.contactIds }), 'sorted', values);
});
