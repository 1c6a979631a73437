import { createHmac, timingSafeEqual } from 'node:crypto';
import type { MessageType, PlatformMedia, Platform } from '@convo/core';
import * as z from 'zod';

/**
 * Meta's webhooks as they reach a channel, in our terms: the signature over the raw body, and the
 * messages, statuses and receipts a body carries. Knows no database: services/channel-inbound.ts
 * stores and applies what is read here.
 */

/** `sha256=` and the hex HMAC-SHA256 of the raw body under the app secret, compared in constant time. */
export function validMetaSignature(appSecret: string, rawBody: Buffer, header: unknown): boolean {
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false;
  const given = Buffer.from(header.slice('sha256='.length), 'hex');
  const expected = createHmac('sha256', appSecret).update(rawBody).digest();
  return given.length === expected.length && timingSafeEqual(given, expected);
}

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
  media: PlatformMedia | null;
  /** When the contact sent it, by the platform's clock. */
  sentAt?: Date | undefined;
}

/** The platform sent something that cannot be stored as it is: trying again would not help. */
export class UnusableInput extends Error {
  override readonly name = 'UnusableInput';
}

/** A contact's message on a channel: who sent it, and what. */
export interface Arrival {
  sender: ChannelSender;
  message: ChannelMessage;
}

/** Why part of a payload was not applied; `path` names it in the body (`entry.0.changes.1.value.messages.2`). */
export interface PayloadError {
  path: string;
  error: string;
}

/** A status WhatsApp reports for one of our sends. */
export interface PlatformStatus {
  platformMessageId: string;
  next: 'sent' | 'delivered' | 'read' | 'failed';
  error?: { code: string; message: string };
}

/**
 * A Messenger or Instagram receipt from the contact: the messages it names (`mids`), every earlier
 * one up to a `watermark` (ms), or, on Instagram, everything up to the last message read (`mid`).
 */
export interface PlatformReceipt {
  contactExternalId: string;
  next: 'delivered' | 'read';
  mids?: string[] | undefined;
  mid?: string | undefined;
  watermark?: number | undefined;
}

/** What one part of a payload brings: messages, a status, or a receipt. */
type ItemBody = { arrivals: Arrival[] } | { status: PlatformStatus } | { receipt: PlatformReceipt };

/** One part of a payload, and where it is in the body (`entry.0.changes.1.value.messages.2`). */
export type PayloadItem = { path: string } & ItemBody;

/** A payload's parts, and the errors found reading it. */
export interface Collected {
  items: PayloadItem[];
  errors: PayloadError[];
}

/** The channel a payload came to, as reading it needs. */
interface Receiver {
  platform: Platform;
  external_id: string;
}

const MAX_ERROR_LENGTH = 500;

/** Errors in the order of the parts of the body they name (`entry.2` before `entry.10`). */
export function inBodyOrder(a: PayloadError, b: PayloadError): number {
  const left = a.path.split('.');
  const right = b.path.split('.');
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const [x, y] = [left[i] as string, right[i] as string];
    if (x === y) continue;
    const numeric = /^\d+$/.test(x) && /^\d+$/.test(y);
    return numeric ? Number(x) - Number(y) : x < y ? -1 : 1;
  }
  return left.length - right.length;
}

export const isUnusable = (error: unknown) => error instanceof z.ZodError || error instanceof UnusableInput;

export function describe(error: unknown): string {
  const text = error instanceof z.ZodError ? issuesOf(error) : error instanceof Error ? error.message : String(error);
  return text.slice(0, MAX_ERROR_LENGTH);
}

/** A parse failure as `field.path: problem`, the path from `under` down. */
function issuesOf(error: z.ZodError, under: string[] = []): string {
  return error.issues
    .map((issue) => {
      const path = [...under, ...issue.path.map(String)].join('.');
      return path === '' ? issue.message : `${path}: ${issue.message}`;
    })
    .join('; ');
}

/** A part of a message (`text`, `image`…) parsed with its schema; a failure names the part. */
function partOf<S extends z.ZodType>(message: Record<string, unknown>, key: string, schema: S): z.output<S> {
  const parsed = schema.safeParse(message[key]);
  if (!parsed.success) throw new UnusableInput(issuesOf(parsed.error, [key]));
  return parsed.data;
}

/** Meta's `object` for each platform's webhooks. */
const OBJECT_OF: Record<Platform, string> = {
  whatsapp: 'whatsapp_business_account',
  facebook: 'page',
  instagram: 'instagram',
};

const Envelope = z.object({ object: z.string(), entry: z.array(z.unknown()) });

/**
 * Reads a webhook body Meta posted to a channel (CONTRACT: Channels, Message delivery): WhatsApp
 * Cloud API `entry[].changes[].value` messages and statuses, Messenger and Instagram
 * `entry[].messaging[]` events. A part that cannot be read is an error of its own, named by its path.
 */
export function readPayload(channel: Receiver, body: string): Collected {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { items: [], errors: [{ path: '', error: 'The body is not JSON' }] };
  }
  const envelope = Envelope.safeParse(parsed);
  if (!envelope.success) return { items: [], errors: [{ path: '', error: describe(envelope.error) }] };
  if (envelope.data.object !== OBJECT_OF[channel.platform]) {
    return {
      items: [],
      errors: [
        {
          path: 'object',
          error: `A ${channel.platform} channel takes object "${OBJECT_OF[channel.platform]}", not "${envelope.data.object}"`,
        },
      ],
    };
  }
  const collected: Collected = { items: [], errors: [] };
  envelope.data.entry.forEach((entry, index) => {
    const path = `entry.${index}`;
    try {
      if (channel.platform === 'whatsapp') whatsappEntry(channel, entry, path, collected);
      else messagingEntry(channel, entry, path, collected);
    } catch (error) {
      collected.errors.push({ path, error: describe(error) });
    }
  });
  return collected;
}

// WhatsApp Cloud API
// ----------------------------------------------------------------------------------------------------

const WaEntry = z.object({ changes: z.array(z.unknown()) });
const WaChange = z.object({ field: z.string(), value: z.unknown() });
const WaValue = z.object({
  metadata: z.object({ phone_number_id: z.string() }),
  contacts: z
    .array(z.object({ wa_id: z.string(), profile: z.object({ name: z.string() }).partial().optional() }))
    .optional(),
  messages: z.array(z.unknown()).optional(),
  statuses: z.array(z.unknown()).optional(),
});
type WaValue = z.output<typeof WaValue>;

/** An entry's changes: those of field `messages` for this channel's number carry messages and statuses. */
function whatsappEntry(channel: Receiver, raw: unknown, path: string, collected: Collected): void {
  WaEntry.parse(raw).changes.forEach((rawChange, index) => {
    const changePath = `${path}.changes.${index}`;
    try {
      const change = WaChange.parse(rawChange);
      if (change.field !== 'messages') return;
      const value = WaValue.parse(change.value);
      if (value.metadata.phone_number_id !== channel.external_id) {
        throw new UnusableInput(
          `For phone number id ${value.metadata.phone_number_id}, not this channel's ${channel.external_id}`,
        );
      }
      const names = new Map((value.contacts ?? []).map((contact) => [contact.wa_id, contact.profile?.name]));
      addWhatsappItems(value, names, `${changePath}.value`, collected);
    } catch (error) {
      collected.errors.push({ path: changePath, error: describe(error) });
    }
  });
}

function addWhatsappItems(value: WaValue, names: Map<string, string | undefined>, path: string, collected: Collected) {
  (value.messages ?? []).forEach((raw, index) => {
    addItem(collected, `${path}.messages.${index}`, () => ({ arrivals: [whatsappArrival(raw, names)] }));
  });
  (value.statuses ?? []).forEach((raw, index) => {
    addItem(collected, `${path}.statuses.${index}`, () => whatsappStatus(raw));
  });
}

/** Adds the part `make` reads from the body; one it cannot read is an error of its own. */
function addItem(collected: Collected, path: string, make: () => ItemBody | undefined): void {
  try {
    const item = make();
    if (item) collected.items.push({ path, ...item });
  } catch (error) {
    collected.errors.push({ path, error: describe(error) });
  }
}

const WaMessage = z.looseObject({
  id: z.string().min(1),
  from: z.string().min(1),
  type: z.string(),
  timestamp: z.string().optional(),
});
const WaText = z.object({ body: z.string() });
const WaMedia = z.object({
  id: z.string().min(1),
  mime_type: z.string().min(1),
  caption: z.string().optional(),
  filename: z.string().optional(),
});
const WaLocation = z.object({
  latitude: z.number(),
  longitude: z.number(),
  name: z.string().optional(),
  address: z.string().optional(),
});
const WaReaction = z.object({ emoji: z.string().optional() });

const WA_MEDIA_TYPES = ['image', 'video', 'audio', 'document', 'sticker'] as const;
type WaMediaType = (typeof WA_MEDIA_TYPES)[number];
const isWaMediaType = (type: string): type is WaMediaType => (WA_MEDIA_TYPES as readonly string[]).includes(type);

type MessageBody = Pick<ChannelMessage, 'type' | 'content' | 'media'>;

function whatsappArrival(raw: unknown, names: Map<string, string | undefined>): Arrival {
  const message = WaMessage.parse(raw);
  const sender: ChannelSender = { externalId: message.from, profileName: names.get(message.from) };
  const sentAt = message.timestamp === undefined ? undefined : new Date(Number(message.timestamp) * 1000);
  return { sender, message: { platformMessageId: message.id, sentAt, ...whatsappBody(message) } };
}

function whatsappBody(message: z.output<typeof WaMessage>): MessageBody {
  const { type } = message;
  if (type === 'text') return { type: 'text', content: partOf(message, 'text', WaText).body, media: null };
  if (isWaMediaType(type)) {
    const media = partOf(message, type, WaMedia);
    return {
      type,
      content: media.caption ?? '',
      media: {
        id: media.id,
        mime_type: media.mime_type,
        ...(media.filename !== undefined ? { filename: media.filename } : {}),
      },
    };
  }
  if (type === 'location') {
    const location = partOf(message, 'location', WaLocation);
    const place = [location.name, location.address].filter((part) => part !== undefined && part !== '').join(', ');
    return { type: 'location', content: place || `${location.latitude},${location.longitude}`, media: null };
  }
  // Removing a reaction sends one without an emoji.
  if (type === 'reaction')
    return { type: 'reaction', content: partOf(message, 'reaction', WaReaction).emoji ?? '', media: null };
  return { type: 'unsupported', content: firstText(message, WA_TEXT_PATHS), media: null };
}

/** Where the other WhatsApp message types (buttons, list and flow replies, orders, system notices) keep their text. */
const WA_TEXT_PATHS = [
  ['button', 'text'],
  ['interactive', 'button_reply', 'title'],
  ['interactive', 'list_reply', 'title'],
  ['interactive', 'nfm_reply', 'body'],
  ['order', 'text'],
  ['system', 'body'],
  ['text', 'body'],
] as const;

function firstText(value: unknown, paths: readonly (readonly string[])[]): string {
  for (const path of paths) {
    let at: unknown = value;
    for (const key of path)
      at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[key] : undefined;
    if (typeof at === 'string') return at;
  }
  return '';
}

const WaStatus = z.object({
  id: z.string().min(1),
  status: z.string(),
  errors: z
    .array(
      z.object({
        code: z.union([z.number(), z.string()]),
        title: z.string().optional(),
        message: z.string().optional(),
      }),
    )
    .optional(),
});

const WA_STATUSES = ['sent', 'delivered', 'read', 'failed'] as const;
type WaStatusName = (typeof WA_STATUSES)[number];
const isWaStatus = (status: string): status is WaStatusName => (WA_STATUSES as readonly string[]).includes(status);

/** Other statuses WhatsApp may add (`deleted`, `warning`) say nothing about delivery and change nothing. */
function whatsappStatus(raw: unknown): ItemBody | undefined {
  const status = WaStatus.parse(raw);
  if (!isWaStatus(status.status)) return undefined;
  if (status.status !== 'failed') return { status: { platformMessageId: status.id, next: status.status } };
  const [first] = status.errors ?? [];
  const error = first
    ? { code: String(first.code), message: first.title ?? first.message ?? 'Not delivered' }
    : { code: 'unknown', message: 'WhatsApp reported the message failed without an error' };
  return { status: { platformMessageId: status.id, next: 'failed', error } };
}

// Messenger and Instagram
// -----------------------------------------------------------------------------------------------

const MessagingEntry = z.object({
  id: z.string(),
  time: z.number().optional(),
  messaging: z.array(z.unknown()).optional(),
});

/** Each of an entry's `messaging` events is one item; an entry for another Page or account is refused whole. */
function messagingEntry(channel: Receiver, raw: unknown, path: string, collected: Collected): void {
  const entry = MessagingEntry.parse(raw);
  if (entry.id !== channel.external_id)
    throw new UnusableInput(`For ${entry.id}, not this channel's ${channel.external_id}`);
  (entry.messaging ?? []).forEach((event, index) => {
    addItem(collected, `${path}.messaging.${index}`, () => messagingEvent(channel, event, entry.time));
  });
}

const Attachment = z.object({
  type: z.string(),
  payload: z
    .looseObject({
      url: z.string().optional(),
      title: z.string().optional(),
      sticker_id: z.union([z.number(), z.string()]).optional(),
      coordinates: z.object({ lat: z.number(), long: z.number() }).optional(),
    })
    .nullish(),
});
type Attachment = z.output<typeof Attachment>;

const MessagingMessage = z.object({
  mid: z.string().min(1),
  text: z.string().optional(),
  attachments: z.array(Attachment).optional(),
  sticker_id: z.union([z.number(), z.string()]).optional(),
  is_echo: z.boolean().optional(),
  is_deleted: z.boolean().optional(),
  is_unsupported: z.boolean().optional(),
});
type MessagingMessage = z.output<typeof MessagingMessage>;

const MessagingEvent = z.object({
  sender: z.object({ id: z.string().min(1) }),
  recipient: z.object({ id: z.string().min(1) }),
  timestamp: z.number().optional(),
  message: z.unknown().optional(),
  reaction: z
    .object({ mid: z.string().min(1), action: z.string().optional(), emoji: z.string().optional() })
    .optional(),
  delivery: z.object({ mids: z.array(z.string()).optional(), watermark: z.number().optional() }).optional(),
  read: z.object({ mid: z.string().optional(), watermark: z.number().optional() }).optional(),
});

/**
 * A message, a reaction, or a delivery or read receipt. The contact is `sender` in each (receipts
 * come from the customer who received or read); our own sends echoed back are skipped. Other
 * events (postbacks, referrals, opt-ins) change nothing.
 */
function messagingEvent(channel: Receiver, raw: unknown, entryTime: number | undefined): ItemBody {
  const event = MessagingEvent.parse(raw);
  const message = event.message === undefined ? undefined : MessagingMessage.parse(event.message);
  if (message?.is_echo) return { arrivals: [] };
  if (event.recipient.id !== channel.external_id)
    throw new UnusableInput(`Addressed to ${event.recipient.id}, not this channel's ${channel.external_id}`);
  const sender: ChannelSender = { externalId: event.sender.id };
  const sentAt = new Date(event.timestamp ?? entryTime ?? Date.now());
  if (message) return { arrivals: messagingParts(message).map((part) => ({ sender, message: { ...part, sentAt } })) };
  if (event.reaction) {
    const { reaction } = event;
    // A reaction has no id of its own: it is named after the message, the reacting contact and the moment.
    const platformMessageId = `${reaction.mid}#reaction:${event.sender.id}:${event.timestamp ?? entryTime ?? ''}:${reaction.action ?? 'react'}`;
    const content = reaction.action === 'unreact' ? '' : (reaction.emoji ?? '');
    return { arrivals: [{ sender, message: { platformMessageId, type: 'reaction', content, media: null, sentAt } }] };
  }
  const { delivery, read } = event;
  const contactExternalId = event.sender.id;
  if (delivery) return { receipt: { contactExternalId, next: 'delivered', ...delivery } };
  if (read) return { receipt: { contactExternalId, next: 'read', ...read } };
  return { arrivals: [] };
}

/**
 * The messages one Messenger or Instagram message makes: one per attachment (the first keeps the
 * platform's id and the text; the others are named after it), or one of the text alone.
 */
function messagingParts(message: MessagingMessage): Omit<ChannelMessage, 'sentAt'>[] {
  const text = message.text ?? '';
  if (message.is_deleted || message.is_unsupported)
    return [{ platformMessageId: message.mid, type: 'unsupported', content: text, media: null }];
  const attachments = message.attachments ?? [];
  if (attachments.length === 0) {
    if (message.sticker_id !== undefined)
      return [{ platformMessageId: message.mid, type: 'sticker', content: text, media: null }];
    return [
      {
        platformMessageId: message.mid,
        type: message.text === undefined ? 'unsupported' : 'text',
        content: text,
        media: null,
      },
    ];
  }
  // Messenger's transition sends a sticker both as an `image` with a `sticker_id` and as a `sticker` attachment.
  const sticker =
    message.sticker_id !== undefined ||
    attachments.some((attachment) => attachment.type === 'sticker' || attachment.payload?.sticker_id !== undefined);
  const parts = sticker
    ? [attachments.find((attachment) => attachment.type === 'sticker') ?? (attachments[0] as Attachment)]
    : attachments;
  return parts.map((attachment, index) => ({
    platformMessageId: index === 0 ? message.mid : `${message.mid}#${index}`,
    ...attachmentBody(attachment, index === 0 ? text : '', sticker),
  }));
}

/** The kinds of media Messenger and Instagram send (a link only), as our types and a generic MIME type. */
const MESSAGING_MEDIA: Record<string, { type: ChannelMessage['type']; mime_type: string }> = {
  image: { type: 'image', mime_type: 'image/*' },
  video: { type: 'video', mime_type: 'video/*' },
  audio: { type: 'audio', mime_type: 'audio/*' },
  file: { type: 'document', mime_type: 'application/octet-stream' },
  sticker: { type: 'sticker', mime_type: 'image/*' },
};

function attachmentBody(attachment: Attachment, text: string, sticker: boolean): MessageBody {
  const payload = attachment.payload ?? undefined;
  const kind = sticker ? MESSAGING_MEDIA.sticker : MESSAGING_MEDIA[attachment.type];
  if (kind && payload?.url) {
    const media: PlatformMedia = { id: payload.url, mime_type: kind.mime_type };
    return { type: kind.type, content: text, media };
  }
  if (attachment.type === 'location' && payload?.coordinates) {
    const { lat, long } = payload.coordinates;
    return { type: 'location', content: text || payload.title || `${lat},${long}`, media: null };
  }
  // Shares, reels, story mentions, templates and fallbacks: the text or link they carry.
  return { type: 'unsupported', content: text || payload?.title || payload?.url || '', media: null };
}
