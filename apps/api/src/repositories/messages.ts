import type { Selectable, Updateable } from 'kysely';
import type { Dialect } from '../db/dialect.js';
import type { MessageTable } from '../db/schema.js';
import { conversationsRepository, messageRecorded } from './conversations.js';
import { prepared } from './prepared.js';
import { type Executor, TenantScope, withTotal } from './tenant.js';

export type MessageRow = Selectable<MessageTable>;

type MessageValues = [
  accountId: string,
  id: string,
  conversationId: string,
  direction: MessageRow['direction'],
  type: MessageRow['type'],
  content: string,
  status: MessageRow['status'],
  createdAt: string,
  /** The media's JSON, for a media message; null otherwise. */
  media: string | null,
];

/**
 * Counts a message on its conversation and makes it the last one, unless the conversation is
 * archived or runs on a channel (whose sends need the channel's checks and a job: messagesService).
 */
const recordIntoOpenConversation = prepared(
  (db: Executor, dialect: Dialect, accountId: string, conversationId: string, content: string, at: string) =>
    messageRecorded(new TenantScope(db, accountId, dialect), conversationId, { content, at })
      .where('conversations.status', '!=', 'archived')
      .where('conversations.channel_id', 'is', null),
);

const insertMessage = prepared(
  (
    db: Executor,
    _dialect: Dialect,
    ...[accountId, id, conversationId, direction, type, content, status, createdAt, media]: MessageValues
  ) =>
    db.insertInto('messages').values({
      account_id: accountId,
      id,
      conversation_id: conversationId,
      direction,
      type,
      content,
      status,
      created_at: createdAt,
      updated_at: createdAt,
      media,
    }),
);

/** Postgres: both in one statement (the update in a CTE, the insert selecting from it). */
const sendIntoOpenConversation = prepared(
  (
    db: Executor,
    dialect: Dialect,
    ...[accountId, id, conversationId, direction, type, content, status, createdAt, media]: MessageValues
  ) =>
    db
      .with('recorded', () =>
        messageRecorded(new TenantScope(db, accountId, dialect), conversationId, { content, at: createdAt })
          .where('conversations.status', '!=', 'archived')
          .where('conversations.channel_id', 'is', null)
          .returning('conversations.id as conversation_id'),
      )
      .insertInto('messages')
      .columns([
        'account_id',
        'id',
        'conversation_id',
        'direction',
        'type',
        'content',
        'status',
        'created_at',
        'updated_at',
        'media',
      ])
      .expression((eb) =>
        eb
          .selectFrom('recorded')
          .select([
            eb.val(accountId).as('account_id'),
            eb.val(id).as('id'),
            'recorded.conversation_id',
            eb.val(direction).as('direction'),
            eb.val(type).as('type'),
            eb.val(content).as('content'),
            eb.val(status).as('status'),
            eb.val(createdAt).as('created_at'),
            eb.val(createdAt).as('updated_at'),
            eb.val(media).as('media'),
          ]),
      )
      .returning('messages.id'),
);

export const messagesRepository = {
  insert: (scope: TenantScope, rows: Omit<MessageRow, 'account_id'> | Omit<MessageRow, 'account_id'>[]) =>
    scope.insert('messages', rows),

  /** Which of these platform ids a stored message has. */
  async platformIdsAmong(scope: TenantScope, platformMessageIds: readonly string[]): Promise<Set<string>> {
    const dialect = scope.dialect;
    const rows = await scope
      .selectFrom('messages')
      .select('messages.platform_message_id')
      .where(dialect.isOneOf('messages.platform_message_id', dialect.boundList(platformMessageIds)))
      .execute();
    return new Set(rows.map((row) => row.platform_message_id as string));
  },

  findById: (scope: TenantScope, id: string) =>
    scope.selectFrom('messages').selectAll().where('messages.id', '=', id).executeTakeFirst(),

  findByPlatformId: (scope: TenantScope, platformMessageId: string) =>
    scope
      .selectFrom('messages')
      .selectAll()
      .where('messages.platform_message_id', '=', platformMessageId)
      .executeTakeFirst(),

  /** Replaces a message's media (its download's outcome); the row as it is now, or undefined when it is gone. */
  setMedia: (scope: TenantScope, id: string, media: string, at: string) =>
    scope
      .updateTable('messages')
      .set({ media, updated_at: at })
      .where('messages.id', '=', id)
      .returningAll()
      .executeTakeFirst() as Promise<MessageRow | undefined>,

  /**
   * Changes a message only while it is in one of `from` (statuses move forward only, so a late or
   * repeated status finds it moved on and changes nothing). The row as it is now, or undefined.
   */
  async updateFrom(
    scope: TenantScope,
    id: string,
    from: readonly MessageRow['status'][],
    patch: Updateable<MessageTable>,
  ): Promise<MessageRow | undefined> {
    return scope
      .updateTable('messages')
      .set(patch)
      .where('messages.id', '=', id)
      .where('messages.status', 'in', from)
      .returningAll()
      .executeTakeFirst() as Promise<MessageRow | undefined>;
  },

  /**
   * Stores a message and records it on its conversation (count, last message, activity), both or
   * neither, unless the conversation is archived, missing or on a channel (then 'channel': the
   * caller records it with messageRecorded and queues its send, in its own transaction). Postgres
   * does it in one statement (the update in a CTE, the insert selecting from it: atomic without
   * BEGIN/COMMIT round trips); without data-modifying CTEs it takes two, which the caller runs in a
   * transaction.
   */
  async insertIntoOpenConversation(
    scope: TenantScope,
    row: Omit<MessageRow, 'account_id'>,
  ): Promise<'recorded' | 'archived' | 'channel' | 'missing'> {
    const values = [
      scope.accountId,
      row.id,
      row.conversation_id,
      row.direction,
      row.type,
      row.content,
      row.status,
      row.created_at,
      row.media,
    ] as const;
    let done: boolean;
    if (scope.dialect.dataModifyingCtes) {
      done = (await sendIntoOpenConversation(scope, ...values)).rows.length > 0;
    } else {
      const updated = await recordIntoOpenConversation(
        scope,
        scope.accountId,
        row.conversation_id,
        row.content,
        row.created_at,
      );
      done = Number(updated.numAffectedRows) > 0;
      if (done) await insertMessage(scope, ...values);
    }
    return done ? 'recorded' : conversationsRepository.whyNotOpen(scope, row.conversation_id);
  },

  /** Oldest first, ties by id. */
  async listByConversation(scope: TenantScope, conversationId: string, page: { limit: number; offset: number }) {
    const base = scope.selectFrom('messages').where('messages.conversation_id', '=', conversationId);
    const rows = base
      .selectAll()
      .orderBy('messages.created_at', 'asc')
      .orderBy('messages.id', 'asc')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    return withTotal(rows, base);
  },
};
