import { type Selectable, type Updateable, sql } from 'kysely';
import { isOneOf, isPostgres } from '../db/dialect.js';
import type { ConversationTable } from '../db/schema.js';
import { type SearchColumn, contactContains } from './contact-search.js';
import { executeNamed, prepared } from './prepared.js';
import { type Executor, TenantScope } from './tenant.js';

export type ConversationRow = Selectable<ConversationTable>;
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

const withContact = (scope: TenantScope) =>
  scope
    .selectFrom('conversations')
    .innerJoin('contacts', (join) =>
      join.onRef('contacts.account_id', '=', 'conversations.account_id').onRef('contacts.id', '=', 'conversations.contact_id'),
    );

/** The contacts a search matches (name, or phone digits when the search has digits). */
const searchedContacts = (scope: TenantScope, search: string, digits: string | undefined) =>
  scope
    .selectFrom('contacts')
    .select('contacts.id')
    .where(() =>
      contactContains(scope.db as never, [
        { columns: ['name_search'], fragment: search },
        ...(digits ? [{ columns: ['phone_digits'] as SearchColumn[], fragment: digits }] : []),
      ]),
    );

/**
 * The conversations a filter selects, from `conversations` alone: a search is a condition on the
 * contact (`contact_id in (matching contacts)`, or in `contactIds` when they were looked up
 * first), so counting never joins and a rare match drives the query from the contacts it found.
 */
const matching = (scope: TenantScope, filter: ConversationFilter, contactIds?: readonly string[]) => {
  let query = scope.selectFrom('conversations');
  if (filter.status) query = query.where('conversations.status', '=', filter.status);
  if (filter.platform) query = query.where('conversations.platform', '=', filter.platform);
  if (contactIds) {
    query = query.where(() => isOneOf(scope.db as never, 'conversations.contact_id', contactIds));
  } else if (filter.search) {
    const { search, searchDigits } = filter;
    query = query.where('conversations.contact_id', 'in', () => searchedContacts(scope, search, searchDigits));
  }
  return query;
};

/**
 * A search first asks for the contacts it matches, up to this many: when they are no more (a
 * phone number, a rare name), the count and the page take their ids as a list, and the search
 * itself runs once instead of inside both. Past it the search stays a subquery of each.
 */
const FEW_CONTACTS = 100;

/**
 * Up to this many matches of a search, SQLite sorts them instead of walking every conversation in
 * activity order until a page is found (which it would do for want of an estimate of the search's
 * selectivity). Past it, the walk finds a page quickly because matches are common.
 */
const SORT_SEARCH_MATCHES_UP_TO = 500;

const columns = ['contacts.name as contact_name', 'contacts.phone as contact_phone'] as const;

/** The exact number of conversations a filter selects, counted (a search). */
const countMatching = (scope: TenantScope, filter: ConversationFilter, contactIds?: readonly string[]) =>
  executeNamed(scope.db, matching(scope, filter, contactIds).select((eb) => eb.fn.countAll<number>().as('total'))).then((rows) => Number(rows[0]?.total ?? 0));

/**
 * The exact number of conversations of a status and/or platform filter, from the counts the
 * triggers of migration 0006 keep per account, status and platform: at most nine rows to add up.
 */
const countFromCounters = (scope: TenantScope, filter: ConversationFilter) => {
  let query = scope.selectFrom('conversation_counts');
  if (filter.status) query = query.where('conversation_counts.status', '=', filter.status);
  if (filter.platform) query = query.where('conversation_counts.platform', '=', filter.platform);
  return executeNamed(scope.db, query.select((eb) => eb.fn.sum<number>('conversation_counts.count').as('total'))).then((rows) => Number(rows[0]?.total ?? 0));
};

const findByIdQuery = prepared((db: Executor, accountId: string, id: string) =>
  withContact(new TenantScope(db, accountId)).selectAll('conversations').select(columns).where('conversations.id', '=', id),
);

export const conversationsRepository = {
  findById: async (scope: TenantScope, id: string): Promise<ConversationWithContact | undefined> =>
    (await findByIdQuery(scope.db, scope.accountId, id)).rows[0],

  /**
   * A page of conversations, latest activity first, and the exact number the filter selects.
   * The page's ids come from the indexes first and only those 20 rows are joined to their
   * contacts (a deep offset skips index entries, not joined rows).
   */
  async list(scope: TenantScope, filter: ConversationFilter, page: { limit: number; offset: number }) {
    let contactIds: string[] | undefined;
    if (filter.search) {
      const found = await executeNamed(scope.db, searchedContacts(scope, filter.search, filter.searchDigits).limit(FEW_CONTACTS + 1));
      if (found.length === 0) return { rows: [], total: 0 };
      if (found.length <= FEW_CONTACTS) contactIds = found.map((contact) => contact.id);
    }
    const count = () => (filter.search ? countMatching(scope, filter, contactIds) : countFromCounters(scope, filter));
    const rows = (sortMatches: boolean) => {
      const ids = matching(scope, filter, contactIds)
        .select('conversations.id')
        // `+column` keeps SQLite from answering the order from the activity index (see above).
        .orderBy(sortMatches ? sql`+conversations.last_activity_at` : sql.ref('conversations.last_activity_at'), 'desc')
        .orderBy('conversations.id', 'desc')
        .limit(page.limit)
        .offset(page.offset);
      return executeNamed(
        scope.db,
        withContact(scope)
          .selectAll('conversations')
          .select(columns)
          .where('conversations.id', 'in', ids)
          .orderBy('conversations.last_activity_at', 'desc')
          .orderBy('conversations.id', 'desc'),
      ) as Promise<ConversationWithContact[]>;
    };
    if (contactIds) {
      // A few contacts' conversations: the page first, sorted. A page that is not full and not
      // past the end tells the exact total by itself (offset + its rows), so the count is only
      // run when it cannot.
      const found = await rows(!isPostgres(scope.db as never));
      if (found.length < page.limit && (found.length > 0 || page.offset === 0)) return { rows: found, total: page.offset + found.length };
      return { rows: found, total: await count() };
    }
    if (isPostgres(scope.db as never)) {
      // The planner estimates a search's selectivity itself; both queries run at once.
      const [found, total] = await Promise.all([rows(false), count()]);
      return { rows: found, total };
    }
    const total = await count();
    if (total <= page.offset) return { rows: [], total };
    return { rows: await rows(Boolean(filter.search) && total <= SORT_SEARCH_MATCHES_UP_TO), total };
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
      .selectAll('conversations')
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
