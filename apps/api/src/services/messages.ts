import type { Message, SendMessageBody } from '@convo/core';
import type * as z from 'zod';
import { ApiError } from '../errors.js';
import { newId, now } from '../ids.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { messagesRepository } from '../repositories/messages.js';
import { type ServiceContext, inTransaction, scopeOf } from './context.js';
import { findConversationOrThrow, toMessage } from './conversations.js';
import { emitEvent } from './events.js';

export const messagesService = {
  /**
   * Stores a message that arrived from the contact (inbound). A resolved conversation reopens;
   * archived ones never receive (the caller opens a new conversation instead).
   */
  async receive(ctx: ServiceContext, input: { conversationId: string; content: string }): Promise<Message> {
    return inTransaction(ctx, async (scope) => {
      const conversation = await findConversationOrThrow(scope, input.conversationId);
      if (conversation.status === 'archived') {
        throw ApiError.badRequest('conversation_id', 'transition', 'The conversation is archived');
      }
      const row = {
        id: newId('message'),
        conversation_id: conversation.id,
        direction: 'inbound' as const,
        type: 'text' as const,
        content: input.content,
        status: 'delivered' as const,
        created_at: now(),
      };
      await messagesRepository.insert(scope, row);
      await conversationsRepository.recordMessage(scope, conversation.id, { content: row.content, at: row.created_at });
      if (conversation.status === 'resolved') {
        await conversationsRepository.update(scope, conversation.id, { status: 'active', updated_at: row.created_at });
      }
      const message = toMessage({ ...row, account_id: ctx.accountId });
      await emitEvent(scope, 'message.received', message, conversation.id);
      return message;
    });
  },

  /** Sends a message from the business into a conversation (outbound). */
  async send(ctx: ServiceContext, body: z.output<typeof SendMessageBody>): Promise<Message> {
    const row = {
      id: newId('message'),
      conversation_id: body.conversation_id,
      direction: 'outbound' as const,
      type: body.type,
      content: body.content,
      status: 'queued' as const,
      created_at: now(),
    };
    const outcome = await messagesRepository.insertIntoOpenConversation(scopeOf(ctx), row);
    if (outcome === 'missing') throw ApiError.notFound('conversation', body.conversation_id);
    if (outcome === 'archived') {
      throw ApiError.badRequest('conversation_id', 'transition', 'The conversation is archived; messages cannot be sent into it');
    }
    return toMessage({ ...row, account_id: ctx.accountId });
  },
};
