import type { Selectable } from 'kysely';
import type { MessageTable } from '../db/schema.js';
import type { TenantScope } from './tenant.js';

export type MessageRow = Selectable<MessageTable>;

export const messagesRepository = {
  insert: (scope: TenantScope, row: Omit<MessageRow, 'account_id'>) => scope.insert('messages', row),

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
