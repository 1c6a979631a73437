import type {
  ConversationStatus,
  Message,
  MessageMedia,
  MessageTemplate,
  MessageType,
  SendMessageBody,
} from '@convo/core';
import type * as z from 'zod';
import { ApiError } from '../errors.js';
import { newId, now } from '../ids.js';
import { channelsRepository, contactIdentitiesRepository } from '../repositories/channels.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { type MessageRow, messagesRepository } from '../repositories/messages.js';
import type { TenantScope } from '../repositories/tenant.js';
import { type SendJob, channelLane, enqueue } from '../repositories/jobs.js';
import { type ServiceContext, transaction, scopeOf } from './context.js';
import { findConversationOrThrow, toConversation, toMessage } from './conversations.js';
import { emitEvent } from './events.js';

/**
 * Free-form messages reach a contact only this long after their last message on the channel (Meta's customer service
 * window).
 */
export const CUSTOMER_SERVICE_WINDOW_MS = 24 * 60 * 60 * 1000;

/** How far each status is along an outbound message's way; statuses only move forward. */
const STATUS_RANK: Record<MessageRow['status'], number> = { queued: 0, sent: 1, delivered: 2, read: 3, failed: 1.5 };

/** The statuses a message may be in for `next` to replace it: those before it (`failed` only before delivery). */
export const statusesBefore = (next: MessageRow['status']): MessageRow['status'][] =>
  (Object.keys(STATUS_RANK) as MessageRow['status'][]).filter((status) =>
    next === 'failed'
      ? status === 'queued' || status === 'sent'
      : status !== 'failed' && STATUS_RANK[status] < STATUS_RANK[next],
  );

export interface InboundMessage {
  conversationId: string;
  /** The conversation's status as this transaction just read or made it, so that it is not read again. */
  conversationStatus?: ConversationStatus;
  content: string;
  type?: MessageType;
  media?: MessageMedia | null;
  /** The platform's id: the same id twice is one message (Meta redelivers). */
  platformMessageId?: string | null;
}

/** A status an outbound message moves to, with the platform's id for it (`sent`) or its error (`failed`). */
export interface MessageAdvance {
  messageId: string;
  status: MessageRow['status'];
  platformMessageId?: string;
  error?: { code: string; message: string };
}

export const messagesService = {
  async retrieve(ctx: ServiceContext, id: string): Promise<Message> {
    const row = await messagesRepository.findById(scopeOf(ctx), id);
    if (!row) throw ApiError.notFound('message', id);
    return toMessage(row);
  },

  /**
   * Stores a message that arrived from the contact (inbound). A resolved conversation reopens;
   * archived ones never receive (the caller opens a new conversation instead).
   */
  async receive(ctx: ServiceContext, input: InboundMessage): Promise<Message> {
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const conversation =
        input.conversationStatus === undefined
          ? await findConversationOrThrow(scope, input.conversationId)
          : { id: input.conversationId, status: input.conversationStatus };
      if (conversation.status === 'archived') {
        throw ApiError.badRequest('conversation_id', 'transition', 'The conversation is archived');
      }
      const at = now();
      const row = {
        id: newId('message'),
        conversation_id: conversation.id,
        direction: 'inbound' as const,
        type: input.type ?? ('text' as const),
        content: input.content,
        status: 'delivered' as const,
        platform_message_id: input.platformMessageId ?? null,
        error: null,
        media: input.media ? JSON.stringify(input.media) : null,
        created_at: at,
        updated_at: at,
      };
      await messagesRepository.insert(scope, row);
      // The message's event takes its sequence number in the statement that records the message,
      // which also tells the status as it is now: a resolve or archive committed since the read above counts.
      const { sequence, status } = await conversationsRepository.recordMessage(scope, conversation.id, {
        content: row.content,
        at: row.created_at,
      });
      if (status === 'archived')
        throw ApiError.badRequest('conversation_id', 'transition', 'The conversation is archived');
      // Only the message whose update changed the status reopens it: concurrent ones read the same status.
      const reopened =
        status === 'resolved' && (await conversationsRepository.reopen(scope, conversation.id, row.created_at));
      const message = toMessage({ ...row, account_id: ctx.accountId });
      await emitEvent(scope, 'message.received', message, { id: conversation.id, sequence });
      if (reopened)
        await emitEvent(
          scope,
          'conversation.updated',
          toConversation(await findConversationOrThrow(scope, conversation.id)),
          conversation.id,
        );
      return message;
    });
  },

  /**
   * Sends a message from the business into a conversation (outbound). Without a channel it is
   * stored and stays `queued` (one statement on Postgres); on a channel it is checked against the
   * platform's rules and a job that sends it is queued in the same transaction.
   */
  async send(ctx: ServiceContext, body: z.output<typeof SendMessageBody>): Promise<Message> {
    const at = now();
    const row = {
      id: newId('message'),
      conversation_id: body.conversation_id,
      direction: 'outbound' as const,
      type: body.type,
      content: body.content,
      status: 'queued' as const,
      platform_message_id: null,
      error: null,
      media: null,
      created_at: at,
      updated_at: at,
    };
    const outcome = await messagesRepository.insertIntoOpenConversation(scopeOf(ctx), row);
    if (outcome === 'missing') throw ApiError.notFound('conversation', body.conversation_id);
    if (outcome === 'archived') throw archived();
    if (outcome === 'channel')
      return transaction(ctx, (tx) => sendOnChannel(scopeOf(tx), row, 'template' in body ? body.template : undefined));
    return toMessage({ ...row, account_id: ctx.accountId });
  },

  /**
   * Moves an outbound message forward (`sent`, `delivered`, `read`, or `failed`) and emits
   * `message.updated`; a status it is already at or past changes nothing and emits nothing.
   */
  async advance(ctx: ServiceContext, input: MessageAdvance): Promise<Message | undefined> {
    const patch = {
      status: input.status,
      updated_at: now(),
      ...(input.platformMessageId ? { platform_message_id: input.platformMessageId } : {}),
      ...(input.error ? { error: JSON.stringify(input.error) } : {}),
    };
    // The change and its event commit together, in the caller's transaction or in one of their own.
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const row = await messagesRepository.updateFrom(scope, input.messageId, statusesBefore(input.status), patch);
      if (!row) return undefined;
      const message = toMessage(row);
      await emitEvent(scope, 'message.updated', message, row.conversation_id);
      return message;
    });
  },
};

const archived = () =>
  ApiError.badRequest('conversation_id', 'transition', 'The conversation is archived; messages cannot be sent into it');

/** The platform's rules, then the message and its send job, in the caller's transaction. */
async function sendOnChannel(
  scope: TenantScope,
  row: Omit<MessageRow, 'account_id'>,
  template: MessageTemplate | undefined,
): Promise<Message> {
  const conversation = await findConversationOrThrow(scope, row.conversation_id);
  if (conversation.status === 'archived') throw archived();
  const channelId = conversation.channel_id as string;
  const channel = await channelsRepository.findById(scope, channelId);
  if (!channel)
    throw ApiError.badRequest(
      'conversation_id',
      'transition',
      "The conversation's channel was deleted; nothing can be sent through it",
    );
  if (channel.status === 'disabled')
    throw ApiError.badRequest('conversation_id', 'transition', "The conversation's channel is disabled");
  if (row.type === 'template' && channel.platform !== 'whatsapp') {
    throw ApiError.badRequest('type', 'enum', 'Template messages can be sent only on WhatsApp');
  }
  if (row.type !== 'template') {
    const identity = await contactIdentitiesRepository.findForContact(scope, conversation.contact_id, channelId);
    const last = identity?.last_inbound_at ? Date.parse(identity.last_inbound_at) : undefined;
    if (last === undefined || Date.parse(row.created_at) - last > CUSTOMER_SERVICE_WINDOW_MS) {
      throw ApiError.badRequest(
        'type',
        'window',
        channel.platform === 'whatsapp'
          ? 'More than 24 hours have passed since the contact last wrote on this channel: send a template message'
          : 'More than 24 hours have passed since the contact last wrote on this channel',
      );
    }
  }
  await conversationsRepository.countMessage(scope, conversation.id, { content: row.content, at: row.created_at });
  await messagesRepository.insert(scope, row);
  const payload: SendJob = { messageId: row.id, ...(template ? { template } : {}) };
  await enqueue(scope.db, { kind: 'send_message', accountId: scope.accountId, payload, lane: channelLane(channelId) });
  return toMessage({ ...row, account_id: scope.accountId });
}
