import { type Expression, type SqlBool, type Updateable, sql } from 'kysely';
import { type Dialect, lockedForUpdate } from '../db/dialect.js';
import type { ConversationTable } from '../db/schema.js';
import type { ConversationFilter } from './conversation-list/filter.js';
import { listConversations } from './conversation-list/list.js';
import { columns, withContact } from './conversation-list/rows.js';
import type { ConversationRow, ConversationWithContact, Page } from './conversation-list/types.js';
import { prepared } from './prepared.js';
import { type Executor, TenantScope } from './tenant.js';

export type { ConversationFilter } from './conversation-list/filter.js';
export type { ConversationRow, ConversationWithContact } from './conversation-list/types.js';

const findByIdQuery = prepared((db: Executor, dialect: Dialect, accountId: string, id: string) =>
  withContact(new TenantScope(db, accountId, dialect))
    .select(columns)
    .where('conversations.id', '=', id),
);

export const conversationsRepository = {
  findById: async (scope: TenantScope, id: string): Promise<ConversationWithContact | undefined> =>
    (await findByIdQuery(scope, scope.accountId, id)).rows[0],

  /** A page of conversations, latest activity first, and the exact number the filter selects. */
  list: (scope: TenantScope, filter: ConversationFilter, page: Page) => listConversations(scope, filter, page),

  /**
   * Holds the conversation until the transaction ends (Postgres), so that status changes take
   * turns and each reads the status the one before it left: a transition happens, and emits its
   * events, once. Messages may still be inserted into it meanwhile (no key changes).
   */
  lockForChange: async (scope: TenantScope, id: string): Promise<boolean> =>
    (await lockedForUpdate(
      scope.dialect,
      scope.selectFrom('conversations').select('conversations.id').where('conversations.id', '=', id),
      {
        keysKept: true,
      },
    ).executeTakeFirst()) !== undefined,

  insert: (scope: TenantScope, row: Omit<ConversationRow, 'account_id'>) => scope.insert('conversations', row),

  update: (scope: TenantScope, id: string, patch: Updateable<ConversationTable>) =>
    scope.updateTable('conversations').set(patch).where('conversations.id', '=', id).execute(),

  /**
   * Reopens a resolved conversation, and tells whether it did: a conditional update, so that of
   * concurrent messages only one reopens it (and emits the change).
   */
  reopen: async (scope: TenantScope, id: string, at: string): Promise<boolean> =>
    Number(
      (
        await scope
          .updateTable('conversations')
          .set({ status: 'active', updated_at: at })
          .where('conversations.id', '=', id)
          .where('conversations.status', '=', 'resolved')
          .executeTakeFirst()
      ).numUpdatedRows,
    ) > 0,

  /** Sets the conversation's status and takes `events` sequence numbers for its events: the last one. */
  async changeStatus(
    scope: TenantScope,
    id: string,
    patch: { status: ConversationRow['status']; updated_at: string },
    events: number,
  ): Promise<number> {
    const row = await scope
      .updateTable('conversations')
      .set((eb) => ({ ...patch, event_sequence: eb('event_sequence', '+', events) }))
      .where('conversations.id', '=', id)
      .returning('conversations.event_sequence')
      .executeTakeFirstOrThrow();
    return Number(row.event_sequence);
  },

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
    return query
      .orderBy('conversations.last_activity_at', 'desc')
      .orderBy('conversations.id', 'desc')
      .executeTakeFirst() as Promise<ConversationWithContact | undefined>;
  },

  /**
   * Counts a new message, makes it the last one, and takes the next event sequence number for its
   * event; with the conversation's status as the update found it (the row is held from then on, so
   * a change committed since an earlier read shows here).
   */
  async recordMessage(
    scope: TenantScope,
    id: string,
    message: { content: string; at: string },
  ): Promise<{ sequence: number; status: ConversationRow['status'] }> {
    const row = await messageRecorded(scope, id, message)
      .set((eb) => ({ event_sequence: eb('event_sequence', '+', 1) }))
      .returning(['conversations.event_sequence', 'conversations.status'])
      .executeTakeFirstOrThrow();
    return { sequence: Number(row.event_sequence), status: row.status };
  },

  /** Counts a new message and makes it the last one (recordMessage without an event sequence). */
  async countMessage(scope: TenantScope, id: string, message: { content: string; at: string }): Promise<void> {
    await messageRecorded(scope, id, message).execute();
  },

  /**
   * recordMessage for several conversations in one statement: each gets `added` messages, the last
   * of them `content` at `at`; its sequence after them is returned (its messages' events take the
   * numbers up to it).
   */
  async recordMessages(
    scope: TenantScope,
    recorded: readonly { conversation_id: string; added: number; content: string; at: string }[],
  ): Promise<Map<string, number>> {
    const dialect = scope.dialect;
    const values = dialect.rowsOf(recorded, { conversation_id: 'text', added: 'integer', content: 'text', at: 'text' });
    const rows = await scope
      .updateTable('conversations')
      .from(values.as('v'))
      .set({
        ...messagesCounted(sql.ref('v.added'), sql.ref('v.content'), sql.ref('v.at')),
        event_sequence: sql<number>`event_sequence + v.added`,
      })
      .where(dialect.isOneOf('conversations.id', dialect.boundList(recorded.map((row) => row.conversation_id))))
      .whereRef('conversations.id', '=', 'v.conversation_id')
      .returning(['conversations.id', 'conversations.event_sequence'])
      .execute();
    return new Map(rows.map((row) => [row.id, Number(row.event_sequence)]));
  },

  /**
   * Each of these contacts' open conversation on a channel (as findOpenOnChannel), by contact,
   * held until the transaction ends: the messages stored into it find the status read here (a
   * concurrent resolve waits, rather than leaving them in a resolved conversation).
   */
  async openOnChannelOf(
    scope: TenantScope,
    contactIds: readonly string[],
    channelId: string,
  ): Promise<Map<string, Pick<ConversationRow, 'id' | 'status'>>> {
    const dialect = scope.dialect;
    const query = scope
      .selectFrom('conversations')
      .select(['conversations.id', 'conversations.contact_id', 'conversations.status'])
      .where('conversations.channel_id', '=', channelId)
      .where(dialect.isOneOf('conversations.contact_id', dialect.boundList(contactIds)))
      .where('conversations.status', '!=', 'archived')
      .orderBy('conversations.last_activity_at', 'desc')
      .orderBy('conversations.id', 'desc');
    const rows = await lockedForUpdate(scope.dialect, query, { keysKept: true }).execute();
    const open = new Map<string, Pick<ConversationRow, 'id' | 'status'>>();
    for (const row of rows) if (!open.has(row.contact_id)) open.set(row.contact_id, { id: row.id, status: row.status });
    return open;
  },

  /** The open conversation of a contact on a channel, the latest active first. */
  findOpenOnChannel: (scope: TenantScope, contactId: string, channelId: string) =>
    withContact(scope)
      .select(columns)
      .where('conversations.channel_id', '=', channelId)
      .where('conversations.contact_id', '=', contactId)
      .where('conversations.status', '!=', 'archived')
      .orderBy('conversations.last_activity_at', 'desc')
      .orderBy('conversations.id', 'desc')
      .executeTakeFirst() as Promise<ConversationWithContact | undefined>,

  /**
   * Why a message could not be recorded without a channel: the conversation is archived, runs on a
   * channel (its sends take the channel's path), or is not this account's.
   */
  async whyNotOpen(scope: TenantScope, id: string): Promise<'archived' | 'channel' | 'missing'> {
    const existing = await scope
      .selectFrom('conversations')
      .select(['conversations.status', 'conversations.channel_id'])
      .where('conversations.id', '=', id)
      .executeTakeFirst();
    if (!existing) return 'missing';
    return existing.status === 'archived' ? 'archived' : existing.channel_id === null ? 'missing' : 'channel';
  },
};

/**
 * What counting `added` messages, the last of them `content` at `at`, sets on a conversation.
 * Concurrent sends may reach the row out of their time order: the last message and the times only
 * ever move forward, so an older message never replaces a newer one.
 */
function messagesCounted(
  added: number | Expression<number>,
  content: string | Expression<string>,
  at: string | Expression<string>,
) {
  const newer = sql<SqlBool>`(last_message_at is null or last_message_at <= ${at})`;
  const latest = (column: 'last_activity_at' | 'updated_at') =>
    sql<string>`case when ${sql.ref(column)} <= ${at} then ${at} else ${sql.ref(column)} end`;
  return {
    message_count: sql<number>`message_count + ${added}`,
    last_message_content: sql<string>`case when ${newer} then ${content} else last_message_content end`,
    last_message_at: sql<string>`case when ${newer} then ${at} else last_message_at end`,
    last_activity_at: latest('last_activity_at'),
    updated_at: latest('updated_at'),
  };
}

/** The update that counts a new message and makes it the last one, for repositories to run or compose. */
export const messageRecorded = (scope: TenantScope, id: string, message: { content: string; at: string }) =>
  scope
    .updateTable('conversations')
    .set(messagesCounted(1, message.content, message.at))
    .where('conversations.id', '=', id);
