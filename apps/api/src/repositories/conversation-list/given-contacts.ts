import { sql } from 'kysely';
import type { Dialect } from '../../db/dialect.js';
import type { SearchTerm } from '../contact-search.js';
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
import { FEW_CONTACTS } from './plan.js';
import {
  type PageShape,
  contactsMatching,
  conversationSearchTerms,
  conversationsWith,
  countOf,
  limitedTo,
  offsetOf,
  pageOf,
  pageShape,
  rowsWithIdsIn,
} from './rows.js';
import type { ConversationWithContact, ListResult, Page } from './types.js';

/**
 * A search whose contacts are few, for `search_phone` (≥ 0.7× the expert floor): the contacts are
 * read once (searchContacts) with their conversation counts (migration 0007: the exact total without
 * a filter) and their ids, and the page is their conversations from `conversations_contact_idx`,
 * sorted. Postgres finds the page in the summary's own statement.
 */

/** What a search's contacts hold: their number, their conversations' number, their ids when few. */
export type SearchContacts = {
  contacts: number;
  conversations: number;
  ids: string[] | string | null;
  /** The page, when the statement found it (Postgres, a search without a filter, few contacts). */
  page: ConversationWithContact[] | undefined;
};

/** Reads a search's contacts; given `page` (a search without a filter), Postgres' statement finds the page too. */
export async function searchContacts(scope: TenantScope, filter: ConversationFilter & { search: string }, page?: Page) {
  const terms = conversationSearchTerms(scope.dialect, filter);
  const paged = page !== undefined && scope.dialect.lateralJoins;
  const shape: SummaryShape = {
    terms: terms.map(({ columns, indexed }) => ({ columns, indexed })),
    page: paged ? pageShape(page) : undefined,
  };
  const values: SummaryValues = {
    accountId: scope.accountId,
    name: terms[0]?.operand as string,
    digits: terms[1]?.operand,
    offset: paged ? offsetOf(page) : undefined,
  };
  const rows = (await summaryQuery(scope, shape, values)) as (ConversationWithContact & {
    contacts: unknown;
    conversations: unknown;
    ids: string[] | string | null;
  })[];
  const first = rows[0];
  const contacts = Number(first?.contacts ?? 0);
  const found: SearchContacts = {
    contacts,
    conversations: Number(first?.conversations ?? 0),
    ids: first?.ids ?? null,
    page: undefined,
  };
  if (paged && contacts <= FEW_CONTACTS)
    found.page = rows
      .filter((row) => row.id !== null)
      .map(({ contacts: _, conversations: __, ids: ___, ...row }) => row);
  return found;
}

/** The page of the conversations of a few contacts (their ids as searchContacts read them), filtered. */
export const givenPage = async (
  scope: TenantScope,
  filter: ConversationFilter,
  contactIds: string[] | string,
  page: Page,
) =>
  (await givenPageQuery(
    scope,
    { ...filterShape(filter), ...pageShape(page) },
    { ...filterValues(scope, filter), contactIds, offset: offsetOf(page) },
  )) as ConversationWithContact[];

const givenPageQuery = preparedByShape(
  (
    db: Executor,
    dialect: Dialect,
    shape: FilterShape & PageShape,
    values: FilterValues & { contactIds: string[] | string; offset: number | undefined },
  ) => {
    const scope = new TenantScope(db, values.accountId, dialect);
    const conversations = whereFiltered(
      conversationsWith(scope, 'contact_id', values.contactIds),
      'conversations',
      filterOf(shape, values),
    );
    return pageOf(scope, conversations, 'sorted', shape, values.offset);
  },
);

/** The number of conversations of a few contacts that the filter selects. */
export const givenCount = (scope: TenantScope, filter: ConversationFilter, contactIds: string[] | string) =>
  countOf(whereFiltered(conversationsWith(scope, 'contact_id', contactIds), 'conversations', filter));

/**
 * One contact's conversations (`contact_id`), filtered, from `conversations_contact_idx`: a contact
 * has few. A search keeps them when the contact matches it and selects none otherwise.
 */
export async function contactPage(
  scope: TenantScope,
  filter: ConversationFilter,
  contactId: string,
  page: Page,
): Promise<ListResult> {
  if (filter.search !== undefined) {
    const terms = conversationSearchTerms(scope.dialect, { ...filter, search: filter.search });
    const matched = await contactsMatching(scope, terms)
      .select('contacts.id')
      .where('contacts.id', '=', contactId)
      .executeTakeFirst();
    if (!matched) return { rows: [], total: 0 };
  }
  const ids = scope.dialect.boundList([contactId]);
  const total = await givenCount(scope, filter, ids);
  if (total <= page.offset) return { rows: [], total };
  return { rows: await givenPage(scope, filter, ids, page), total };
}

/** What decides the summary's SQL: its terms' columns and whether each is indexed, and its page's shape. */
interface SummaryShape {
  terms: Omit<SearchTerm, 'operand'>[];
  page: PageShape | undefined;
}

/** The operands (bindSearch) of the name's term and of the digits' term; the page's offset. */
type SummaryValues = { accountId: string; name: string; digits: string | undefined; offset: number | undefined };

const summaryQuery = preparedByShape((db: Executor, dialect: Dialect, shape: SummaryShape, values: SummaryValues) => {
  const scope = new TenantScope(db, values.accountId, dialect);
  const terms = shape.terms.map((term, i) => ({ ...term, operand: (i === 0 ? values.name : values.digits) as string }));
  const summary = db
    .with(
      (cte) => cte('matched').materialized(),
      () => contactsMatching(scope, terms).select(['contacts.id', 'contacts.conversation_count']),
    )
    .selectFrom('matched')
    .select((eb) => [
      eb.fn.countAll<number>().as('contacts'),
      eb.fn.sum<number>('matched.conversation_count').as('conversations'),
      sql<
        string[] | string | null
      >`case when count(*) <= ${sql.lit(FEW_CONTACTS)} then ${dialect.listOf('matched.id')} end`.as('ids'),
    ]);
  if (shape.page === undefined) return summary;
  const ids = scope
    .selectFrom('conversations')
    .select('conversations.id')
    .where(dialect.isInList('conversations.contact_id', sql.ref('summary.ids')))
    .orderBy('conversations.last_activity_at', 'desc')
    .orderBy('conversations.id', 'desc');
  const page = limitedTo(ids, shape.page, values.offset);
  return db
    .selectFrom(sql`(${summary})`.as('summary'))
    .leftJoinLateral(
      () => rowsWithIdsIn(scope, dialect.listFrom(page)).as('r'),
      (join) => join.on(sql<boolean>`summary.ids is not null`),
    )
    .select([
      sql<number>`summary.contacts`.as('contacts'),
      sql<number>`summary.conversations`.as('conversations'),
      sql`summary.ids`.as('ids'),
    ])
    .selectAll('r' as never)
    .orderBy(sql`r.last_activity_at`, 'desc')
    .orderBy(sql`r.id`, 'desc');
});
