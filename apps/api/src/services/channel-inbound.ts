import type { ContactIdentity, Message, MessageMedia, MessageType } from '@convo/core';
import type { Updateable } from 'kysely';
import type { ContactTable } from '../db/schema.js';
import { newId, now } from '../ids.js';
import { type ChannelRow, channelMessagesRepository, contactIdentitiesRepository } from '../repositories/channels.js';
import { type ContactRow, contactsRepository } from '../repositories/contacts.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { type MessageRow, messagesRepository } from '../repositories/messages.js';
import type { TenantScope } from '../repositories/tenant.js';
import { type ServiceContext, scopeOf, transaction } from './context.js';
import { toContact } from './contacts.js';
import { toMessage } from './conversations.js';
import { conversationsService } from './conversations.js';
import { emitEvent, emitEvents } from './events.js';
import { messagesService } from './messages.js';

/**
 * What arrives on a channel, whatever the platform (CONTRACT: Channels, Message delivery): a
 * contact's message, found or made into contact, conversation and message; and the statuses of
 * our own sends, which move outbound messages forward.
 */

/** Who wrote: the platform's id for them on the channel (WhatsApp id, PSID or IGSID). */
export interface ChannelSender {
  externalId: string;
  /** WhatsApp's profile name; it fills a contact's empty name. */
  profileName?: string | undefined;
}

/** A message as the platform delivered it, in our terms. */
export interface ChannelMessage {
  /** The platform's id: the same id twice is one message (Meta redelivers). */
  platformMessageId: string;
  type: MessageType;
  content: string;
  media: MessageMedia | null;
  /** When the contact sent it, by the platform's clock. */
  sentAt?: Date | undefined;
}

/** The platform sent something that cannot be stored as it is: trying again would not help. */
export class UnusableInput extends Error {
  override readonly name = 'UnusableInput';
}

/** A status for a message that is not stored yet is `unknown`: its send may not have recorded the platform's id yet. */
export type StatusOutcome = 'applied' | 'unknown';

type Status = MessageRow['status'];

const MAX_NAME_LENGTH = 200;

/**
 * Stores a contact's message from a channel, in one transaction: the contact (by its identity on the
 * channel, else for WhatsApp by phone, else new), the start of its 24-hour window, the conversation
 * on the channel (opened when none is open), the message. Undefined when the message was stored
 * already.
 */
export async function receiveOnChannel(
  ctx: ServiceContext,
  channel: ChannelRow,
  sender: ChannelSender,
  message: ChannelMessage,
): Promise<Message | undefined> {
  try {
    return await receiveOnce(ctx, channel, sender, message);
  } catch (error) {
    // A concurrent delivery of the same message or of the same new contact committed first: the
    // second run finds what it stored.
    if (!ctx.database.isUniqueViolation(error)) throw error;
    return receiveOnce(ctx, channel, sender, message);
  }
}

function receiveOnce(
  ctx: ServiceContext,
  channel: ChannelRow,
  sender: ChannelSender,
  message: ChannelMessage,
): Promise<Message | undefined> {
  return transaction(ctx, async (tx) => {
    const scope = scopeOf(tx);
    if (await messagesRepository.findByPlatformId(scope, message.platformMessageId)) return undefined;
    const contact = await contactFor(scope, channel, sender);
    await contactIdentitiesRepository.touchInbound(scope, channel.id, sender.externalId, inboundAt(message.sentAt));
    const conversation =
      (await conversationsRepository.findOpenOnChannel(scope, contact.id, channel.id)) ??
      (await conversationsService.create(tx, {
        contact_id: contact.id,
        platform: channel.platform,
        channelId: channel.id,
      }));
    return messagesService.receive(tx, {
      conversationId: conversation.id,
      conversationStatus: conversation.status,
      content: message.content,
      type: message.type,
      media: message.media,
      platformMessageId: message.platformMessageId,
    });
  });
}

/** A contact's message on a channel: who sent it, and what. */
export interface Arrival {
  sender: ChannelSender;
  message: ChannelMessage;
}

/**
 * Stores several contacts' messages from one channel as receiveOnChannel does, in one transaction
 * and a few statements for all of them, which the backlog target of bench/README.md (Channels)
 * needs. It takes the messages of senders whose contact and open conversation exist and stay as
 * they are; the others (a new sender, a name to fill, a resolved conversation to reopen) it returns
 * in order, for receiveOnChannel. A message stored already is skipped.
 */
export async function receiveManyOnChannel(
  ctx: ServiceContext,
  channel: ChannelRow,
  arrivals: readonly Arrival[],
): Promise<Arrival[]> {
  if (arrivals.length === 0) return [];
  return transaction(ctx, async (tx) => {
    const scope = scopeOf(tx);
    const stored = await messagesRepository.platformIdsAmong(
      scope,
      distinct(arrivals.map((arrival) => arrival.message.platformMessageId)),
    );
    const senders = distinct(arrivals.map((arrival) => arrival.sender.externalId));
    const identities = new Map(
      (await contactIdentitiesRepository.findManyWithNames(scope, channel.id, senders)).map((row) => [
        row.external_id,
        row,
      ]),
    );
    const contactIds = distinct([...identities.values()].map((identity) => identity.contact_id));
    const open =
      contactIds.length === 0
        ? new Map()
        : await conversationsRepository.openOnChannelOf(scope, contactIds, channel.id);
    const conversationOf = (sender: ChannelSender): string | undefined => {
      const identity = identities.get(sender.externalId);
      if (!identity || (profileName(sender.profileName) !== null && !identity.name)) return undefined;
      const conversation = open.get(identity.contact_id);
      return conversation?.status === 'active' ? conversation.id : undefined;
    };
    // A sender goes one way for all its messages, so that they stay in order.
    const elsewhere = new Set(
      arrivals
        .filter((arrival) => conversationOf(arrival.sender) === undefined)
        .map((arrival) => arrival.sender.externalId),
    );
    const left: Arrival[] = [];
    const taken: { arrival: Arrival; conversationId: string }[] = [];
    for (const arrival of arrivals) {
      const conversationId = conversationOf(arrival.sender);
      if (elsewhere.has(arrival.sender.externalId) || conversationId === undefined) left.push(arrival);
      else if (!stored.has(arrival.message.platformMessageId)) taken.push({ arrival, conversationId });
      stored.add(arrival.message.platformMessageId);
    }
    if (taken.length > 0) await storeReceived(scope, channel, taken);
    return left;
  });
}

/** The messages receiveManyOnChannel takes: stored, counted in their conversations, and announced. */
async function storeReceived(
  scope: TenantScope,
  channel: ChannelRow,
  taken: readonly { arrival: Arrival; conversationId: string }[],
): Promise<void> {
  const at = now();
  const rows: Omit<MessageRow, 'account_id'>[] = taken.map(({ arrival: { message }, conversationId }) => ({
    id: newId('message'),
    conversation_id: conversationId,
    direction: 'inbound',
    type: message.type,
    content: message.content,
    status: 'delivered',
    platform_message_id: message.platformMessageId,
    error: null,
    media: message.media ? JSON.stringify(message.media) : null,
    created_at: at,
    updated_at: at,
  }));
  await messagesRepository.insert(scope, rows);

  const recorded = new Map<string, { conversation_id: string; added: number; content: string; at: string }>();
  for (const row of rows) {
    const conversation = recorded.get(row.conversation_id);
    if (conversation) Object.assign(conversation, { added: conversation.added + 1, content: row.content });
    else
      recorded.set(row.conversation_id, { conversation_id: row.conversation_id, added: 1, content: row.content, at });
  }
  const sequences = await conversationsRepository.recordMessages(scope, [...recorded.values()]);
  // Each conversation's messages take the sequence numbers up to the one its update returned, in order.
  const nextSequence = new Map<string, number>();
  for (const { conversation_id, added } of recorded.values()) {
    const last = sequences.get(conversation_id);
    if (last === undefined)
      throw new Error(`Conversation ${conversation_id} vanished while messages were stored in it`);
    nextSequence.set(conversation_id, last - added + 1);
  }

  const touches = new Map<string, string>();
  for (const { arrival } of taken) {
    const inbound = inboundAt(arrival.message.sentAt);
    if ((touches.get(arrival.sender.externalId) ?? '') < inbound) touches.set(arrival.sender.externalId, inbound);
  }
  await contactIdentitiesRepository.touchInboundAll(
    scope,
    channel.id,
    [...touches].map(([external_id, inbound]) => ({ external_id, at: inbound })),
  );

  await emitEvents(
    scope,
    rows.map((row) => {
      const sequence = nextSequence.get(row.conversation_id) as number;
      nextSequence.set(row.conversation_id, sequence + 1);
      return {
        type: 'message.received',
        data: toMessage({ ...row, account_id: scope.accountId }),
        conversation: { id: row.conversation_id, sequence },
      };
    }),
  );
}

const distinct = (values: readonly string[]): string[] => [...new Set(values)];

/**
 * The window starts when the contact wrote, not when we got to it (a payload may wait for a retry);
 * a platform clock ahead of ours never stretches it.
 */
function inboundAt(sentAt: Date | undefined): string {
  const current = Date.now();
  const at = sentAt?.getTime();
  return new Date(at === undefined || Number.isNaN(at) || at > current ? current : at).toISOString();
}

/** The sender's contact, locked until the transaction ends so that its messages open one conversation. */
async function contactFor(scope: TenantScope, channel: ChannelRow, sender: ChannelSender): Promise<ContactRow> {
  const name = profileName(sender.profileName);
  const identity = await contactIdentitiesRepository.find(scope, channel.id, sender.externalId);
  if (identity) {
    const contact = await lockContact(scope, identity.contact_id);
    return updateContact(scope, contact, { name });
  }
  const newIdentity: ContactIdentity = {
    platform: channel.platform,
    channel_id: channel.id,
    external_id: sender.externalId,
  };
  if (channel.platform !== 'whatsapp') return insertContact(scope, { phone: null, name: null, identity: newIdentity });
  const phone = whatsappPhone(sender.externalId);
  const existing = await contactsRepository.findByPhone(scope, phone);
  if (!existing) return insertContact(scope, { phone, name, identity: newIdentity });
  return updateContact(scope, await lockContact(scope, existing.id), { name, identity: newIdentity });
}

async function lockContact(scope: TenantScope, id: string): Promise<ContactRow> {
  const contact = await contactsRepository.findByIdForUpdate(scope, id);
  // Identities go with their contact (foreign key, cascade), and contacts are found just before.
  if (!contact) throw new Error(`Contact ${id} vanished while a message was stored for it`);
  return contact;
}

/** A WhatsApp id is the number's digits; the contact's phone is it in E.164. */
function whatsappPhone(waId: string): string {
  const phone = `+${waId}`;
  if (!/^\+[1-9]\d{6,14}$/.test(phone)) throw new UnusableInput(`WhatsApp id "${waId}" is not a phone number's digits`);
  return phone;
}

/** A profile name as a contact name: trimmed, at most 200 characters, none when blank. */
function profileName(name: string | undefined): string | null {
  const trimmed = name?.trim();
  return trimmed ? [...trimmed].slice(0, MAX_NAME_LENGTH).join('') : null;
}

async function insertContact(
  scope: TenantScope,
  input: { phone: string | null; name: string | null; identity: ContactIdentity },
): Promise<ContactRow> {
  const at = now();
  const row: Omit<ContactRow, 'account_id' | 'conversation_count'> = {
    id: newId('contact'),
    name: input.name,
    name_search: input.name?.toLowerCase() ?? null,
    phone: input.phone,
    phone_digits: input.phone?.replace(/\D/g, '') ?? '',
    email: null,
    email_search: null,
    tags: '[]',
    attributes: '{}',
    identities: JSON.stringify([input.identity]),
    created_at: at,
    updated_at: at,
  };
  await contactsRepository.insert(scope, row);
  await insertIdentity(scope, row.id, input.identity, at);
  await emitEvent(scope, 'contact.created', toContact({ ...row, account_id: scope.accountId }));
  return { ...row, account_id: scope.accountId, conversation_count: 0 };
}

function insertIdentity(scope: TenantScope, contactId: string, identity: ContactIdentity, at: string): Promise<void> {
  return contactIdentitiesRepository.insert(scope, {
    channel_id: identity.channel_id,
    external_id: identity.external_id,
    contact_id: contactId,
    platform: identity.platform,
    last_inbound_at: null,
    created_at: at,
  });
}

/** Gives a contact a new identity (kept in `contacts.identities` too, oldest first) and a name it lacks. */
async function updateContact(
  scope: TenantScope,
  contact: ContactRow,
  changes: { name: string | null; identity?: ContactIdentity },
): Promise<ContactRow> {
  const at = now();
  const patch: Updateable<ContactTable> = {};
  if (changes.name !== null && !contact.name)
    Object.assign(patch, { name: changes.name, name_search: changes.name.toLowerCase() });
  if (changes.identity) {
    const identities = JSON.parse(contact.identities) as ContactIdentity[];
    patch.identities = JSON.stringify([...identities, changes.identity]);
    await insertIdentity(scope, contact.id, changes.identity, at);
  }
  if (Object.keys(patch).length === 0) return contact;
  patch.updated_at = at;
  await contactsRepository.update(scope, contact.id, patch);
  const updated = { ...contact, ...patch } as ContactRow;
  await emitEvent(scope, 'contact.updated', toContact(updated));
  return updated;
}

/**
 * Moves the outbound message with this platform id to `next` (forward only; `message.updated` when it
 * changes). `unknown` when no message has the id.
 */
export function applyStatus(
  ctx: ServiceContext,
  platformMessageId: string,
  next: Status,
  error?: { code: string; message: string },
): Promise<StatusOutcome> {
  return transaction(ctx, async (tx) => {
    const scope = scopeOf(tx);
    const message = await messagesRepository.findByPlatformId(scope, platformMessageId);
    if (!message) return 'unknown';
    // An id of one of the contact's own messages has no status of ours to move.
    if (message.direction === 'outbound') {
      await messagesService.advance(tx, { messageId: message.id, status: next, ...(error ? { error } : {}) });
    }
    return 'applied';
  });
}

/** The statuses a receipt for everything up to a time moves on: only messages the platform has taken. */
const COVERED_BY_RECEIPT: Record<'delivered' | 'read', Status[]> = { delivered: ['sent'], read: ['sent', 'delivered'] };

/**
 * A receipt for every message up to a time (Messenger's watermarks): the outbound messages to the
 * contact on the channel created then or before move to `next`. Nothing when the contact is unknown.
 */
export function applyReceiptUpTo(
  ctx: ServiceContext,
  channel: ChannelRow,
  contactExternalId: string,
  upTo: Date,
  next: 'delivered' | 'read',
): Promise<void> {
  return transaction(ctx, async (tx) => {
    const scope = scopeOf(tx);
    const identity = await contactIdentitiesRepository.find(scope, channel.id, contactExternalId);
    if (!identity) return;
    await advanceUpTo(tx, channel.id, identity.contact_id, upTo.toISOString(), next);
  });
}

/**
 * A read receipt naming the last message read (Instagram): that message and the earlier outbound
 * messages to the same contact on the channel are read. `unknown` when no message has the id.
 */
export function applyReadThrough(
  ctx: ServiceContext,
  channel: ChannelRow,
  platformMessageId: string,
): Promise<StatusOutcome> {
  return transaction(ctx, async (tx) => {
    const scope = scopeOf(tx);
    const message = await messagesRepository.findByPlatformId(scope, platformMessageId);
    if (!message) return 'unknown';
    if (message.direction !== 'outbound') return 'applied';
    const conversation = await conversationsRepository.findById(scope, message.conversation_id);
    if (conversation?.channel_id === channel.id) {
      await advanceUpTo(tx, channel.id, conversation.contact_id, message.created_at, 'read');
    }
    return 'applied';
  });
}

async function advanceUpTo(
  tx: ServiceContext,
  channelId: string,
  contactId: string,
  upTo: string,
  next: 'delivered' | 'read',
) {
  const covered = await channelMessagesRepository.outboundUpTo(
    scopeOf(tx),
    channelId,
    contactId,
    upTo,
    COVERED_BY_RECEIPT[next],
  );
  for (const { id } of covered) await messagesService.advance(tx, { messageId: id, status: next });
}
