import { timingSafeEqual } from 'node:crypto';
import type { ContactIdentity, Message, SandboxInboundBody } from '@convo/core';
import type { Updateable } from 'kysely';
import type * as z from 'zod';
import {
  type Arrival,
  type ChannelSender,
  type Collected,
  type PayloadError,
  type PlatformReceipt,
  UnusableInput,
  describe,
  inBodyOrder,
  isUnusable,
  readPayload,
  validMetaSignature,
} from '../channels/meta-webhooks.js';
import type { ContactTable } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { nextUlid, newId, now } from '../ids.js';
import {
  type ChannelPayloadRow,
  type ChannelRow,
  channelMessagesRepository,
  channelPayloadsRepository,
  channelsRepository,
  contactIdentitiesRepository,
} from '../repositories/channels.js';
import { type ContactRow, contactsRepository } from '../repositories/contacts.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { type MessageRow, messagesRepository } from '../repositories/messages.js';
import { jobRow } from '../repositories/jobs.js';
import type { TenantScope } from '../repositories/tenant.js';
import { openSecret } from '../secret-box.js';
import { type ServiceContext, scopeOf, transaction } from './context.js';
import { contactsService, toContact } from './contacts.js';
import { toMessage } from './conversations.js';
import { conversationsService } from './conversations.js';
import { emitEvent, emitEvents } from './events.js';
import { pendingMedia, queueMediaDownloads } from './media.js';
import { messagesService } from './messages.js';

/**
 * What arrives on a channel (CONTRACT: Channels, Message delivery): Meta's webhooks, stored with the
 * job that processes them; a contact's message, found or made into contact, conversation and
 * message; and the statuses of our own sends, which move outbound messages forward.
 */

/** A status for a message that is not stored yet is `unknown`: its send may not have recorded the platform's id yet. */
type StatusOutcome = 'applied' | 'unknown';

type Status = MessageRow['status'];

const MAX_NAME_LENGTH = 200;

/** What Meta's webhooks run with: no account yet, the channel they name says whose they are. */
export type IngressContext = Omit<ServiceContext, 'accountId'>;

const utf8 = new TextDecoder('utf-8', { fatal: true });

const sameText = (a: string, b: string) => {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
};

async function channelOf(ctx: IngressContext, id: string): Promise<ChannelRow> {
  const channel = await channelsRepository.findByIdInAnyAccount(ctx.database.db, id);
  if (!channel) throw ApiError.notFound('channel', id);
  return channel;
}

/** Meta's subscription handshake: `hub.mode`, `hub.verify_token` and `hub.challenge` as sent. */
interface MetaHandshake {
  channelId: string;
  mode: unknown;
  token: unknown;
  challenge: unknown;
}

/** Meta's webhooks to a channel (CONTRACT: Channels), whatever account the channel is in. */
export const channelInboundService = {
  /** Meta's subscription handshake: the challenge, when the verify token is the channel's. */
  async verify(ctx: IngressContext, input: MetaHandshake): Promise<string> {
    const channel = await channelOf(ctx, input.channelId);
    const { mode, token, challenge } = input;
    const tokenMatches = typeof token === 'string' && sameText(token, channel.verify_token);
    if (mode !== 'subscribe' || !tokenMatches || typeof challenge !== 'string') {
      throw new ApiError('forbidden', "hub.mode must be subscribe and hub.verify_token the channel's verify_token");
    }
    return challenge;
  },

  /**
   * A body Meta posted: its signature checked before anything is parsed or stored, then stored
   * with the job that processes it (process, below), in one transaction. A
   * disabled channel receives nothing, and Meta is still answered 200 so that it does not retry.
   */
  async receive(ctx: IngressContext, input: { channelId: string; rawBody: Buffer; signature: unknown }): Promise<void> {
    const channel = await channelOf(ctx, input.channelId);
    const appSecret = openSecret(ctx.settings.secretKey(), channel.app_secret_sealed);
    if (!validMetaSignature(appSecret, input.rawBody, input.signature)) {
      throw ApiError.unauthorized('Missing or invalid X-Hub-Signature-256');
    }
    let body: string;
    try {
      body = utf8.decode(input.rawBody);
      const parsed: unknown = JSON.parse(body);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    } catch {
      throw ApiError.badRequest('body', 'json', 'The body is not a JSON object');
    }
    if (channel.status === 'disabled') return;
    const at = now();
    const payloadId = `pl_${nextUlid()}`;
    const accountId = channel.account_id;
    const payload = { account_id: accountId, id: payloadId, channel_id: channel.id, body, received_at: at };
    const unprocessed = { processed_at: null, errors: null };
    const job = jobRow({ kind: 'process_channel_payload', accountId, payload: { payloadId } }, at);
    // One statement where the dialect has data-modifying CTEs, else two in a transaction.
    const insert = ({ database }: IngressContext) =>
      channelPayloadsRepository.insertWithJob(database.db, database.capabilities, { ...payload, ...unprocessed }, job);
    await (ctx.database.capabilities.dataModifyingCtes ? insert(ctx) : transaction(ctx, insert));
  },

  /**
   * Processes the bodies a claim's jobs name, of the context's account: the messages of its
   * payloads on one channel are stored together (receiveManyOnChannel); those it leaves, and every
   * status and receipt, are applied one by one, so one that fails loses none of the others; what
   * failed is kept with its payload. A part that may pass later (a status for a message whose send
   * is not recorded yet, a database failure) runs its whole payload again on
   * `channelPayloadRetryScheduleMs`, which changes nothing already applied; after the last try it
   * is recorded as failed too. An outcome for each job, in order.
   */
  async process(ctx: ServiceContext, input: { jobs: readonly PayloadJob[] }): Promise<PayloadOutcome[]> {
    const scope = scopeOf(ctx);
    const payloads = await channelPayloadsRepository.findMany(
      scope,
      input.jobs.map((job) => job.payloadId),
    );
    const channels = await channelsRepository.findMany(scope, [
      ...new Set(payloads.map((payload) => payload.channel_id)),
    ]);

    const work: PayloadWork[] = [];
    const outcomes = new Map<PayloadJob, PayloadOutcome>();
    const finished: { id: string; errors: PayloadError[] }[] = [];
    for (const job of input.jobs) {
      const payload = payloads.find((row) => row.id === job.payloadId);
      if (!payload || payload.processed_at !== null) continue;
      const channel = channels.find((row) => row.id === payload.channel_id);
      if (!channel || channel.status === 'disabled') {
        finished.push({
          id: payload.id,
          errors: [{ path: '', error: channel ? 'The channel is disabled' : 'The channel was deleted' }],
        });
        continue;
      }
      work.push({ job, payload, channel, ...readPayload(channel, payload.body) });
    }

    for (const channel of new Set(work.map((payload) => payload.channel))) {
      const ofChannel = work.filter((payload) => payload.channel === channel);
      const arrivals = ofChannel.flatMap((payload) =>
        payload.items.flatMap((item) => ('arrivals' in item ? item.arrivals : [])),
      );
      // What the set-based path does not take, or all of it when it fails, goes one message at a time.
      const left = new Set(await receiveManyOnChannel(ctx, { channel, arrivals }).catch(() => arrivals));
      for (const payload of ofChannel) {
        const later = await applyItems(ctx, payload, left);
        const retryIn =
          later.length > 0 ? ctx.settings.channelPayloadRetryScheduleMs[payload.job.attempts - 1] : undefined;
        if (retryIn !== undefined) outcomes.set(payload.job, { retryAt: new Date(Date.now() + retryIn).toISOString() });
        else finished.push({ id: payload.payload.id, errors: [...payload.errors, ...later].sort(inBodyOrder) });
      }
    }

    await channelPayloadsRepository.markProcessed(
      scope,
      now(),
      finished.map(({ id, errors }) => ({ id, errors: errors.length === 0 ? null : JSON.stringify(errors) })),
    );
    return input.jobs.map((job) => outcomes.get(job));
  },
};

/** A stored body's job: the payload, and which try this is (1 on the first). */
export interface PayloadJob {
  payloadId: string;
  attempts: number;
}

/** What follows a payload's processing: nothing, or another run of its job at `retryAt`. */
export type PayloadOutcome = { retryAt: string } | undefined;

/** A payload being processed: its job, its channel, its parts, and the errors found reading it. */
interface PayloadWork extends Collected {
  job: PayloadJob;
  payload: ChannelPayloadRow;
  channel: ChannelRow;
}

/**
 * Applies a payload's parts in order: its messages that receiveManyOnChannel left, one at a time,
 * and its statuses and receipts. Errors that cannot pass later join the payload's; those that may
 * are returned.
 */
async function applyItems(ctx: ServiceContext, payload: PayloadWork, left: Set<Arrival>): Promise<PayloadError[]> {
  const later: PayloadError[] = [];
  for (const item of payload.items) {
    try {
      if ('arrivals' in item) {
        for (const arrival of item.arrivals)
          if (left.has(arrival)) await receiveOnChannel(ctx, { channel: payload.channel, ...arrival });
        continue;
      }
      const outcome =
        'status' in item
          ? await applyStatus(ctx, item.status.platformMessageId, item.status.next, item.status.error)
          : await applyReceipt(ctx, payload.channel, item.receipt);
      if (outcome === 'unknown') later.push({ path: item.path, error: 'No message has this platform id' });
    } catch (error) {
      (isUnusable(error) ? payload.errors : later).push({ path: item.path, error: describe(error) });
    }
  }
  return later;
}

/** A Messenger or Instagram receipt: the messages it names, then those up to its watermark. */
async function applyReceipt(
  ctx: ServiceContext,
  channel: ChannelRow,
  receipt: PlatformReceipt,
): Promise<StatusOutcome | undefined> {
  let outcome: StatusOutcome | undefined;
  for (const mid of receipt.mids ?? [])
    if ((await applyStatus(ctx, mid, receipt.next)) === 'unknown') outcome = 'unknown';
  if (receipt.mid !== undefined && (await applyReadThrough(ctx, channel, receipt.mid)) === 'unknown')
    outcome = 'unknown';
  if (receipt.watermark !== undefined)
    await applyReceiptUpTo(ctx, channel, receipt.contactExternalId, new Date(receipt.watermark), receipt.next);
  return outcome;
}

/**
 * A message from a contact as the sandbox endpoint (`POST /v1/sandbox/inbound`) makes one up;
 * channels' messages take receiveOnChannel instead. In one transaction: finds the
 * contact by phone or creates it; finds the contact's conversation on that platform that is not
 * archived, or opens one (`conversation.created`); stores the inbound message, which reopens a
 * resolved conversation (`message.received`).
 */
export async function receiveInbound(
  ctx: ServiceContext,
  input: z.output<typeof SandboxInboundBody>,
): Promise<Message> {
  return transaction(ctx, async (tx) => {
    const scope = scopeOf(tx);
    const contact =
      (await contactsRepository.findByPhone(scope, input.from.phone)) ??
      (await contactsService.create(tx, { phone: input.from.phone, name: input.from.name ?? null }));
    const conversation =
      (await conversationsRepository.findOpenForContact(scope, contact.id, input.platform)) ??
      (await conversationsService.create(tx, { contact_id: contact.id, platform: input.platform }));
    return messagesService.receive(tx, { conversationId: conversation.id, content: input.content });
  });
}

/**
 * Stores a contact's message from a channel, in one transaction: the contact (by its identity on the
 * channel, else for WhatsApp by phone, else new), the start of its 24-hour window, the conversation
 * on the channel (opened when none is open), the message. Undefined when the message was stored
 * already.
 */
export async function receiveOnChannel(ctx: ServiceContext, input: OnChannel<Arrival>): Promise<Message | undefined> {
  try {
    return await receiveOnce(ctx, input);
  } catch (error) {
    // A concurrent delivery of the same message or of the same new contact committed first: the
    // second run finds what it stored.
    if (!ctx.database.isUniqueViolation(error)) throw error;
    return receiveOnce(ctx, input);
  }
}

/** What arrived, and the channel it arrived on. */
type OnChannel<T> = T & { channel: ChannelRow };

function receiveOnce(
  ctx: ServiceContext,
  { channel, sender, message }: OnChannel<Arrival>,
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

/**
 * Stores several contacts' messages from one channel as receiveOnChannel does, in one transaction
 * and a few statements for all of them, which the backlog target of bench/README.md (Channels)
 * needs. It takes the messages of senders whose contact and open conversation exist and stay as
 * they are; the others (a new sender, a name to fill, a resolved conversation to reopen) it returns
 * in order, for receiveOnChannel. A message stored already is skipped.
 */
export async function receiveManyOnChannel(
  ctx: ServiceContext,
  { channel, arrivals }: OnChannel<{ arrivals: readonly Arrival[] }>,
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
    media: message.media ? JSON.stringify(pendingMedia(message.media)) : null,
    created_at: at,
    updated_at: at,
  }));
  await messagesRepository.insert(scope, rows);
  await queueMediaDownloads(
    scope,
    rows.filter((row) => row.media !== null).map((row) => row.id),
  );

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
function applyStatus(
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
function applyReceiptUpTo(
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
function applyReadThrough(ctx: ServiceContext, channel: ChannelRow, platformMessageId: string): Promise<StatusOutcome> {
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
