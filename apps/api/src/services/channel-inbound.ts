import type { ContactIdentity, Message, MessageMedia, MessageType } from '@convo/core';
import type { Updateable } from 'kysely';
import type { ContactTable } from '../db/schema.js';
import { newId, now } from '../ids.js';
import { type ChannelRow, channelMessagesRepository, contactIdentitiesRepository } from '../repositories/channels.js';
import { type ContactRow, contactsRepository } from '../repositories/contacts.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { type MessageRow, messagesRepository } from '../repositories/messages.js';
import type { TenantScope } from '../repositories/tenant.js';
import { type ServiceContext, inContextTransaction, inTransaction } from './context.js';
import { toContact } from './contacts.js';
import { conversationsService } from './conversations.js';
import { emitEvent } from './events.js';
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
export async function receiveOnChannel(ctx: ServiceContext, channel: ChannelRow, sender: ChannelSender, message: ChannelMessage): Promise<Message | undefined> {
  try {
    return await receiveOnce(ctx, channel, sender, message);
  } catch (error) {
    // A concurrent delivery of the same message or of the same new contact committed first: the
    // second run finds what it stored.
    if (!ctx.database.isUniqueViolation(error)) throw error;
    return receiveOnce(ctx, channel, sender, message);
  }
}

function receiveOnce(ctx: ServiceContext, channel: ChannelRow, sender: ChannelSender, message: ChannelMessage): Promise<Message | undefined> {
  return inContextTransaction(ctx, (tx) =>
    inTransaction(tx, async (scope) => {
      if (await messagesRepository.findByPlatformId(scope, message.platformMessageId)) return undefined;
      const contact = await contactFor(scope, channel, sender);
      await contactIdentitiesRepository.touchInbound(scope, channel.id, sender.externalId, inboundAt(message.sentAt));
      const conversation =
        (await conversationsRepository.findOpenOnChannel(scope, contact.id, channel.id)) ??
        (await conversationsService.create(tx, { contact_id: contact.id, platform: channel.platform }, channel.id));
      return messagesService.receive(tx, {
        conversationId: conversation.id,
        conversationStatus: conversation.status,
        content: message.content,
        type: message.type,
        media: message.media,
        platformMessageId: message.platformMessageId,
      });
    }),
  );
}

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
  const newIdentity: ContactIdentity = { platform: channel.platform, channel_id: channel.id, external_id: sender.externalId };
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

async function insertContact(scope: TenantScope, input: { phone: string | null; name: string | null; identity: ContactIdentity }): Promise<ContactRow> {
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
async function updateContact(scope: TenantScope, contact: ContactRow, changes: { name: string | null; identity?: ContactIdentity }): Promise<ContactRow> {
  const at = now();
  const patch: Updateable<ContactTable> = {};
  if (changes.name !== null && !contact.name) Object.assign(patch, { name: changes.name, name_search: changes.name.toLowerCase() });
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
export function applyStatus(ctx: ServiceContext, platformMessageId: string, next: Status, error?: { code: string; message: string }): Promise<StatusOutcome> {
  return inTransaction(ctx, async (scope) => {
    const message = await messagesRepository.findByPlatformId(scope, platformMessageId);
    if (!message) return 'unknown';
    // An id of one of the contact's own messages has no status of ours to move.
    if (message.direction === 'outbound') await messagesService.advance(scope, message.id, next, error ? { error } : {});
    return 'applied';
  });
}

/** The statuses a receipt for everything up to a time moves on: only messages the platform has taken. */
const COVERED_BY_RECEIPT: Record<'delivered' | 'read', Status[]> = { delivered: ['sent'], read: ['sent', 'delivered'] };

/**
 * A receipt for every message up to a time (Messenger's watermarks): the outbound messages to the
 * contact on the channel created then or before move to `next`. Nothing when the contact is unknown.
 */
export function applyReceiptUpTo(ctx: ServiceContext, channel: ChannelRow, contactExternalId: string, upTo: Date, next: 'delivered' | 'read'): Promise<void> {
  return inTransaction(ctx, async (scope) => {
    const identity = await contactIdentitiesRepository.find(scope, channel.id, contactExternalId);
    if (!identity) return;
    await advanceUpTo(scope, channel.id, identity.contact_id, upTo.toISOString(), next);
  });
}

/**
 * A read receipt naming the last message read (Instagram): that message and the earlier outbound
 * messages to the same contact on the channel are read. `unknown` when no message has the id.
 */
export function applyReadThrough(ctx: ServiceContext, channel: ChannelRow, platformMessageId: string): Promise<StatusOutcome> {
  return inTransaction(ctx, async (scope) => {
    const message = await messagesRepository.findByPlatformId(scope, platformMessageId);
    if (!message) return 'unknown';
    if (message.direction !== 'outbound') return 'applied';
    const conversation = await conversationsRepository.findById(scope, message.conversation_id);
    if (conversation?.channel_id === channel.id) await advanceUpTo(scope, channel.id, conversation.contact_id, message.created_at, 'read');
    return 'applied';
  });
}

async function advanceUpTo(scope: TenantScope, channelId: string, contactId: string, upTo: string, next: 'delivered' | 'read'): Promise<void> {
  const covered = await channelMessagesRepository.outboundUpTo(scope, channelId, contactId, upTo, COVERED_BY_RECEIPT[next]);
  for (const { id } of covered) await messagesService.advance(scope, id, next);
}
