import {
  CONVERSATION_TRANSITIONS,
  type Conversation,
  type Message,
  type MessageMedia,
  type PlatformMedia,
} from '@convo/core';
import type {
  CreateConversationBody,
  ListConversationsQuery,
  ListMessagesQuery,
  UpdateConversationBody,
} from '@convo/core';
import type * as z from 'zod';
import { ApiError } from '../errors.js';
import { newId, now } from '../ids.js';
import { contactsRepository } from '../repositories/contacts.js';
import { filtersOf } from '../repositories/conversation-list/filter.js';
import { type ConversationWithContact, conversationsRepository } from '../repositories/conversations.js';
import { type MessageRow, messagesRepository } from '../repositories/messages.js';
import type { TenantScope } from '../repositories/tenant.js';
import { type Change, type ServiceContext, transaction, page, scopeOf, foldedSearch } from './context.js';
import { emitEvent, emitEvents } from './events.js';

export const toConversation = (row: ConversationWithContact): Conversation => ({
  id: row.id,
  contact: { id: row.contact_id, name: row.contact_name, phone: row.contact_phone },
  platform: row.platform,
  channel_id: row.channel_id,
  status: row.status,
  message_count: row.message_count,
  last_message:
    row.last_message_at === null ? null : { content: row.last_message_content ?? '', timestamp: row.last_message_at },
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** A message's media as stored; a message stored before media were kept reads as never downloaded. */
export function mediaOf(row: Pick<MessageRow, 'media'>): MessageMedia | null {
  if (row.media === null) return null;
  const stored = JSON.parse(row.media) as PlatformMedia & Partial<MessageMedia>;
  if (stored.status !== undefined) return stored as MessageMedia;
  return {
    ...stored,
    file_id: null,
    status: 'failed',
    error: { code: 'not_downloaded', message: 'The message arrived before Convo kept media' },
  };
}

export const toMessage = (row: MessageRow): Message => ({
  id: row.id,
  conversation_id: row.conversation_id,
  direction: row.direction,
  type: row.type,
  content: row.content,
  status: row.status,
  platform_message_id: row.platform_message_id,
  error: row.error === null ? null : (JSON.parse(row.error) as Message['error']),
  media: row.media === null ? null : (JSON.parse(row.media) as Message['media']),
  created_at: row.created_at,
  updated_at: row.updated_at,
});

export async function findConversationOrThrow(scope: TenantScope, id: string): Promise<ConversationWithContact> {
  const row = await conversationsRepository.findById(scope, id);
  if (!row) throw ApiError.notFound('conversation', id);
  return row;
}

export const conversationsService = {
  async list(ctx: ServiceContext, query: z.output<typeof ListConversationsQuery>) {
    const filter = { ...filtersOf(query), contactId: query.contact_id, ...foldedSearch(query.search) };
    const { rows, total } = await conversationsRepository.list(scopeOf(ctx), filter, query);
    return page(rows.map(toConversation), total, query.limit, query.offset);
  },

  async retrieve(ctx: ServiceContext, id: string): Promise<Conversation> {
    return toConversation(await findConversationOrThrow(scopeOf(ctx), id));
  },

  /** With `channelId` when a channel's inbound message opens it (the contract's body never has one). */
  async create(
    ctx: ServiceContext,
    body: z.output<typeof CreateConversationBody> & { channelId?: string },
  ): Promise<Conversation> {
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const contact = await contactsRepository.findByIdForReference(scope, body.contact_id);
      if (!contact) throw ApiError.notFound('contact', body.contact_id);
      const at = now();
      const row = {
        id: newId('conversation'),
        contact_id: contact.id,
        platform: body.platform,
        channel_id: body.channelId ?? null,
        status: 'active' as const,
        message_count: 0,
        last_message_content: null,
        last_message_at: null,
        last_activity_at: at,
        event_sequence: 0,
        created_at: at,
        updated_at: at,
      };
      await conversationsRepository.insert(scope, row);
      const conversation = toConversation({
        ...row,
        account_id: ctx.accountId,
        contact_name: contact.name,
        contact_phone: contact.phone,
      });
      await emitEvent(scope, 'conversation.created', conversation, conversation.id);
      return conversation;
    });
  },

  /** Status changes follow CONVERSATION_TRANSITIONS; setting the current status changes nothing. */
  async update(ctx: ServiceContext, { id, body }: Change<typeof UpdateConversationBody>): Promise<Conversation> {
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      // Locked first, then read: concurrent changes take turns, each deciding on what the one
      // before it left, so a transition (and its events) happens once.
      if (body.status !== undefined && !(await conversationsRepository.lockForChange(scope, id)))
        throw ApiError.notFound('conversation', id);
      const current = await findConversationOrThrow(scope, id);
      const next = body.status;
      if (next === undefined || next === current.status) return toConversation(current);
      if (!CONVERSATION_TRANSITIONS[current.status].includes(next)) {
        throw ApiError.badRequest('status', 'transition', `A conversation cannot go from ${current.status} to ${next}`);
      }
      const patch = { status: next, updated_at: now() };
      const types =
        next === 'resolved'
          ? (['conversation.updated', 'conversation.resolved'] as const)
          : (['conversation.updated'] as const);
      // The change takes its events' sequence numbers in its own update: a second update of the row
      // would check its contact's foreign key again, and wait for (or deadlock with) the contact's delete.
      const last = await conversationsRepository.changeStatus(scope, id, patch, types.length);
      const conversation = toConversation({ ...current, ...patch });
      await emitEvents(
        scope,
        types.map((type, index) => ({
          type,
          data: conversation,
          conversation: { id, sequence: last - types.length + 1 + index },
        })),
      );
      return conversation;
    });
  },

  async listMessages(ctx: ServiceContext, { id, query }: { id: string; query: z.output<typeof ListMessagesQuery> }) {
    const scope = scopeOf(ctx);
    await findConversationOrThrow(scope, id);
    const { rows, total } = await messagesRepository.listByConversation(scope, id, query);
    return page(rows.map(toMessage), total, query.limit, query.offset);
  },
};
