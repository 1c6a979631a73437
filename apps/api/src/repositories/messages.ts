import type { Kysely, Selectable } from 'kysely';
import { isPostgres } from '../db/dialect.js';
import type { Database, MessageTable } from '../db/schema.js';
import { conversationsRepository, messageRecorded } from './conversations.js';
import type { TenantScope } from './tenant.js';

export type MessageRow = Selectable<MessageTable>;

export const messagesRepository = {
  insert: (scope: TenantScope, row: Omit<MessageRow, 'account_id'>) => scope.insert('messages', row),

  /**
   * Stores a message and records it on its conversation (count, last message, activity), both or
   * neither, unless the conversation is archived or missing. Postgres does it in one statement
   * (the update in a CTE, the insert selecting from it: atomic without BEGIN/COMMIT round trips);
   * SQLite in a transaction of the two.
   */
  async insertIntoOpenConversation(scope: TenantScope, row: Omit<MessageRow, 'account_id'>): Promise<'recorded' | 'archived' | 'missing'> {
    const recorded = (on: TenantScope) =>
      messageRecorded(on, row.conversation_id, { content: row.content, at: row.created_at }).where('conversations.status', '!=', 'archived');
    let done: boolean;
    if (isPostgres(scope.db as Kysely<Database>)) {
      const inserted = await (scope.db as Kysely<Database>)
        .with('recorded', () => recorded(scope).returning('conversations.id as conversation_id'))
        .insertInto('messages')
        .columns(['account_id', 'id', 'conversation_id', 'direction', 'type', 'content', 'status', 'created_at'])
        .expression((eb) =>
          eb
            .selectFrom('recorded')
            .select([
              eb.val(scope.accountId).as('account_id'),
              eb.val(row.id).as('id'),
              'recorded.conversation_id',
              eb.val(row.direction).as('direction'),
              eb.val(row.type).as('type'),
              eb.val(row.content).as('content'),
              eb.val(row.status).as('status'),
              eb.val(row.created_at).as('created_at'),
            ]),
        )
        .returning('messages.id')
        .executeTakeFirst();
      done = inserted !== undefined;
    } else {
      const work = async (on: TenantScope) => {
        const updated = await recorded(on).executeTakeFirst();
        if (Number(updated.numUpdatedRows) === 0) return false;
        await messagesRepository.insert(on, row);
        return true;
      };
      done = scope.db.isTransaction ? await work(scope) : await scope.db.transaction().execute((trx) => work(scope.with(trx)));
    }
    return done ? 'recorded' : conversationsRepository.whyNotOpen(scope, row.conversation_id);
  },

  /** Oldest first, ties by id. */
  async listByConversation(scope: TenantScope, conversationId: string, page: { limit: number; offset: number }) {
    const base = scope.selectFrom('messages').where('messages.conversation_id', '=', conversationId);
    const [rows, count] = await Promise.all([
      base.selectAll().orderBy('messages.created_at', 'asc').orderBy('messages.id', 'asc').limit(page.limit).offset(page.offset).execute(),
      base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
    ]);
    return { rows, total: Number(count.total) };
  },
};
