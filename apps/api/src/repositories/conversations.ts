import type { Selectable, Updateable } from 'kysely';
import type { ConversationTable } from '../db/schema.js';
import { type SearchColumn, contactContains } from './contact-search.js';
import type { TenantScope } from './tenant.js';

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

const filtered = (scope: TenantScope, filter: ConversationFilter) => {
  let query = withContact(scope);
  if (filter.status) query = query.where('conversations.status', '=', filter.status);
  if (filter.platform) query = query.where('conversations.platform', '=', filter.platform);
  if (filter.search) {
    const search = filter.search;
    const digits = filter.searchDigits;
    query = query.where(() =>
      contactContains(scope.db as never, [
        { columns: ['name_search'], fragment: search },
        ...(digits ? [{ columns: ['phone_digits'] as SearchColumn[], fragment: digits }] : []),
      ]),
    );
  }
  return query;
};

const columns = ['contacts.name as contact_name', 'contacts.phone as contact_phone'] as const;

export const conversationsRepository = {
  findById: (scope: TenantScope, id: string): Promise<ConversationWithContact | undefined> =>
    withContact(scope).selectAll('conversations').select(columns).where('conversations.id', '=', id).executeTakeFirst(),

  async list(scope: TenantScope, filter: ConversationFilter, page: { limit: number; offset: number }) {
    const [rows, count] = await Promise.all([
      filtered(scope, filter)
        .selectAll('conversations')
        .select(columns)
        .orderBy('conversations.last_activity_at', 'desc')
        .orderBy('conversations.id', 'desc')
        .limit(page.limit)
        .offset(page.offset)
        .execute(),
      filtered(scope, filter)
        .select((eb) => eb.fn.countAll<number>().as('total'))
        .executeTakeFirstOrThrow(),
    ]);
    return { rows: rows as ConversationWithContact[], total: Number(count.total) };
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
  recordMessage: (scope: TenantScope, id: string, message: { content: string; at: string }) =>
    scope
      .updateTable('conversations')
      .set((eb) => ({
        message_count: eb('message_count', '+', 1),
        last_message_content: message.content,
        last_message_at: message.at,
        last_activity_at: message.at,
        updated_at: message.at,
      }))
      .where('conversations.id', '=', id)
      .execute(),
};
