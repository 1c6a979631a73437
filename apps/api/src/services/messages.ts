import type {
  ConversationStatus,
  MediaMessageType,
  Message,
  PlatformMedia,
  MessageTemplate,
  MessageType,
  OutboundMedia,
  SendMessageBody,
} from '@convo/core';
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import type * as z from 'zod';
import { type GraphError, sendToPlatform } from '../channels/graph-api.js';
import type { DatabaseHandle } from '../db/database.js';
import { databaseRateLimiter } from '../db/rate-limiter-store.js';
import { ApiError } from '../errors.js';
import { newId, now } from '../ids.js';
import { type ChannelRow, channelsRepository, contactIdentitiesRepository } from '../repositories/channels.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { type MessageRow, messagesRepository } from '../repositories/messages.js';
import type { TenantScope } from '../repositories/tenant.js';
import { type SendJob, channelLane, enqueue } from '../repositories/jobs.js';
import { channelsService, openChannelToken } from './channels.js';
import { nextTryAt } from './retry-schedule.js';
import { type ServiceContext, transaction, scopeOf } from './context.js';
import { findConversationOrThrow, mediaOf, toConversation, toMessage } from './conversations.js';
import { emitEvent } from './events.js';
import { pendingMedia, queueMediaDownloads } from './media.js';
import { outboundMediaOf, sendMedia } from './outbound-media.js';
import { templatesService } from './templates.js';

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
  media?: PlatformMedia | null;
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
        media: input.media ? JSON.stringify(pendingMedia(input.media)) : null,
        created_at: at,
        updated_at: at,
      };
      await messagesRepository.insert(scope, row);
      if (input.media) await queueMediaDownloads(scope, [row.id]);
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
    const media = body.media ? await outboundMediaFor(ctx, { ...body, media: body.media }) : null;
    if (body.template) {
      const conversation = await findConversationOrThrow(scopeOf(ctx), body.conversation_id);
      await templatesService.checkSend(ctx, { channelId: conversation.channel_id, template: body.template });
    }
    const row = {
      id: newId('message'),
      conversation_id: body.conversation_id,
      direction: 'outbound' as const,
      type: body.type,
      content: body.content,
      status: 'queued' as const,
      platform_message_id: null,
      error: null,
      media: media ? JSON.stringify(media) : null,
      created_at: at,
      updated_at: at,
    };
    // One statement where the dialect has data-modifying CTEs, else two in a transaction.
    const insert = (c: ServiceContext) => messagesRepository.insertIntoOpenConversation(scopeOf(c), row);
    const outcome = await (ctx.database.capabilities.dataModifyingCtes ? insert(ctx) : transaction(ctx, insert));
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

  /**
   * Sends one outbound message through its conversation's channel (CONTRACT: Message delivery), for
   * the worker's send job. A message that is no longer `queued` was handled already (a crash after
   * recording `sent` must not send it twice). Each send takes a slot of the channel's rate first; a
   * refused slot asks for another run later without counting a try. Accepted → `sent`; a refused
   * token also puts the channel in `error`; other Graph errors fail the message, except those that
   * may pass later, retried on `channelSendRetryScheduleMs` before the message fails with the last.
   */
  async deliver(ctx: ServiceContext, input: SendJob): Promise<SendOutcome> {
    const target = await loadTarget(scopeOf(ctx), input.messageId);
    if (target === undefined) return;
    if ('code' in target) return fail(ctx, input.messageId, target);

    const token = openChannelToken(ctx.settings, target.channel);
    if (typeof token !== 'string') return fail(ctx, input.messageId, token);

    const waitMs = await takeSendSlot(ctx, target.channel.id);
    if (waitMs !== undefined) return { retryAt: new Date(Date.now() + waitMs).toISOString() };

    const { message, channel, recipient } = target;
    const media = mediaOf(message);
    const finalTry = ctx.settings.channelSendRetryScheduleMs[triesSoFar(input)] === undefined;
    const result = media
      ? await sendMedia(ctx, { message, media, channel, recipient, token, finalTry })
      : await sendToPlatform(ctx.settings, channel, token, recipient, {
          type: message.type,
          content: message.content,
          template: input.template,
        });
    if (result.ok) {
      await messagesService.advance(ctx, {
        messageId: message.id,
        status: 'sent',
        platformMessageId: result.platformMessageId,
      });
      return;
    }
    if (result.kind === 'invalid_token') return refuseToken(ctx, message.id, channel, result);
    if (result.kind === 'retryable') return retryLater(ctx, input, result);
    return fail(ctx, message.id, errorOf(result));
  },
};

/** A media message's media, after the rules of its conversation's platform. */
async function outboundMediaFor(
  ctx: ServiceContext,
  body: { conversation_id: string; type: string; content: string; media: OutboundMedia },
) {
  const conversation = await findConversationOrThrow(scopeOf(ctx), body.conversation_id);
  const type = body.type as MediaMessageType;
  return outboundMediaOf(ctx, { platform: conversation.platform, type, media: body.media, caption: body.content });
}

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

// Sending on a channel ------------------------------------------------------------------------------------------------

/** What follows a send: nothing, or another run of its job at `retryAt` (with the tries so far). */
export type SendOutcome = { retryAt: string; payload?: SendJob } | undefined;

interface MessageError {
  code: string;
  message: string;
}

/** Everything one send needs, read before the send slot is taken. */
interface SendTarget {
  message: MessageRow;
  channel: ChannelRow;
  recipient: string;
}

/**
 * The message, its channel and the recipient's platform id; undefined when there is nothing to do,
 * or the error the message fails with when it cannot be sent at all.
 */
async function loadTarget(scope: TenantScope, messageId: string): Promise<SendTarget | MessageError | undefined> {
  const message = await messagesRepository.findById(scope, messageId);
  if (message?.status !== 'queued' || message.direction !== 'outbound') return undefined;
  const conversation = await conversationsRepository.findById(scope, message.conversation_id);
  if (!conversation?.channel_id) return undefined;
  const channel = await channelsRepository.findById(scope, conversation.channel_id);
  if (!channel)
    return { code: 'channel_deleted', message: "The conversation's channel was deleted before the message was sent" };
  if (channel.status === 'disabled')
    return { code: 'channel_disabled', message: "The conversation's channel was disabled before the message was sent" };
  const identity = await contactIdentitiesRepository.findForContact(scope, conversation.contact_id, channel.id);
  // A WhatsApp contact is reached at its number, without the "+", when it never wrote on the channel.
  const recipient =
    identity?.external_id ??
    (channel.platform === 'whatsapp' ? conversation.contact_phone?.replace(/^\+/, '') : undefined);
  if (!recipient) return { code: 'no_recipient', message: 'The contact has no address on this channel' };
  return { message, channel, recipient };
}

const errorOf = (error: GraphError): MessageError => ({ code: error.code, message: error.message });

async function fail(ctx: ServiceContext, messageId: string, error: MessageError): Promise<undefined> {
  await messagesService.advance(ctx, { messageId, status: 'failed', error });
}

/** Failed tries before this one; the payload comes from JSON, so anything else counts as none. */
const triesSoFar = (payload: SendJob): number =>
  typeof payload.tries === 'number' && Number.isInteger(payload.tries) && payload.tries > 0 ? payload.tries : 0;

/**
 * Another try after the next wait of the schedule (the tries so far carried in the payload), or,
 * past the schedule's end, the message fails with this last error.
 */
async function retryLater(ctx: ServiceContext, payload: SendJob, error: GraphError): Promise<SendOutcome> {
  const failedTries = triesSoFar(payload);
  const retryAt = nextTryAt(ctx.settings.channelSendRetryScheduleMs, failedTries);
  if (retryAt === undefined) return fail(ctx, payload.messageId, errorOf(error));
  return { retryAt, payload: { ...payload, tries: failedTries + 1 } };
}

/** The token was refused: the message fails and the channel goes to `error`, in one transaction. */
async function refuseToken(
  ctx: ServiceContext,
  messageId: string,
  used: ChannelRow,
  error: GraphError,
): Promise<undefined> {
  await transaction(ctx, async (tx) => {
    await messagesService.advance(tx, { messageId, status: 'failed', error: errorOf(error) });
    await channelsService.refuseToken(tx, { channel: used, error });
  });
}

// The channel's send rate --------------------------------------------------------------------------------------------

/** Limiters by database and rate: every worker of a process on one database shares them. */
const sendLimiters = new WeakMap<DatabaseHandle, Map<number, RateLimiterAbstract>>();

/**
 * The channel's send rate as rate-limiter-flexible counts it: one send per slot of 1/rate seconds.
 * A slot holds one send rather than a window of `rate` sends because two fixed windows side by side
 * let up to twice the rate through in the second that straddles them; with one send per slot, no
 * second ever holds more than the rate. Postgres keeps the slots in `rate_limits`, so that all
 * workers share them; SQLite (one process) keeps them in memory.
 */
function sendRateLimiter(database: DatabaseHandle, sendsPerSecond: number): RateLimiterAbstract {
  let byRate = sendLimiters.get(database);
  if (!byRate) {
    byRate = new Map();
    sendLimiters.set(database, byRate);
  }
  const existing = byRate.get(sendsPerSecond);
  if (existing) return existing;

  // Whole milliseconds: the Postgres store keeps expiry times as bigint.
  const slotMs = Math.max(1, Math.ceil(1000 / sendsPerSecond));
  const options = { keyPrefix: `send${slotMs}ms`, points: 1, duration: slotMs / 1000 };
  const limiter = databaseRateLimiter(database, options);
  byRate.set(sendsPerSecond, limiter);
  return limiter;
}

/**
 * Takes the channel's next send slot: undefined when taken, else how long to wait. Jobs refused in
 * the same slot queue up behind one another (each refusal is counted in the slot), so that each
 * comes back when its turn may be free instead of all at the next slot.
 */
async function takeSendSlot(ctx: ServiceContext, channelId: string): Promise<number | undefined> {
  const limiter = sendRateLimiter(ctx.database, ctx.settings.channelSendsPerSecond);
  try {
    await limiter.consume(channelId);
    return undefined;
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    const slotMs = limiter.duration * 1000;
    const ahead = Math.max(0, rejection.consumedPoints - limiter.points - 1);
    return Math.max(1, rejection.msBeforeNext) + ahead * slotMs;
  }
}
