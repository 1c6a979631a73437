/**
 * Meta webhook bodies (WhatsApp Cloud API, Messenger Platform, Instagram Messaging) built exactly as Meta documents
 * them, so tests feed Convo what Meta would post rather than a shape we invented. Every builder is pure apart from
 * fresh ids and the current time, which callers can pin.
 */
import { createHmac, randomBytes, randomInt } from 'node:crypto';

// Signature ----------------------------------------------------------------------------------------------------------

// https://developers.facebook.com/docs/graph-api/webhooks/getting-started#event-notifications
/**
 * The `X-Hub-Signature-256` value Meta sends: `sha256=` and the hex HMAC-SHA256 of the raw body under the app secret.
 */
export function signMetaPayload(appSecret: string, rawBody: string | Buffer): string {
  return `sha256=${createHmac('sha256', appSecret).update(rawBody).digest('hex')}`;
}

/** The legacy `X-Hub-Signature` (SHA-1) value Meta still sends next to the SHA-256 one. */
export function signMetaPayloadSha1(appSecret: string, rawBody: string | Buffer): string {
  return `sha1=${createHmac('sha1', appSecret).update(rawBody).digest('hex')}`;
}

// Ids and clocks ------------------------------------------------------------------------------------------------------

/** A fresh WhatsApp message id: `wamid.` and standard base64, padding included, as Meta's ids are. */
export const newWamid = (): string => `wamid.${randomBytes(30).toString('base64')}`;

/** A fresh Messenger/Instagram message id in the `m_…` form the Send API and webhooks use. */
export const newMid = (): string => `m_${randomBytes(33).toString('base64url')}`;

/** A numeric Graph id (media, scoped users), as a string like Meta's. */
export const newGraphId = (digits = 16): string =>
  `${randomInt(1, 10)}${Array.from({ length: digits - 1 }, () => randomInt(0, 10)).join('')}`;

/** WhatsApp timestamps are unix seconds written as a decimal string. */
export const whatsappNow = (): string => String(Math.floor(Date.now() / 1000));

/** Messenger and Instagram timestamps are unix milliseconds as a number. */
export const messagingNow = (): number => Date.now();

// WhatsApp ------------------------------------------------------------------------------------------------------------

/** Business account id used when a test does not care which account the number belongs to. */
export const DEFAULT_WABA_ID = '102290129340398';

export interface WhatsAppInboundMessage {
  from: string;
  id: string;
  timestamp: string;
  type: string;
  [field: string]: unknown;
}

export interface WhatsAppContact {
  profile?: { name: string };
  wa_id: string;
}

export interface WhatsAppMetadata {
  display_phone_number: string;
  phone_number_id: string;
}

export interface WhatsAppStatusError {
  code: number;
  title: string;
  message?: string;
  error_data?: { details: string };
  href?: string;
}

export interface WhatsAppStatus {
  id: string;
  status: 'sent' | 'delivered' | 'read' | 'failed';
  timestamp: string;
  recipient_id: string;
  errors?: WhatsAppStatusError[];
  pricing?: { billable: boolean; pricing_model: string; category: string };
  conversation?: { id: string; expiration_timestamp?: string; origin: { type: string } };
}

export interface WhatsAppChangeValue {
  messaging_product: 'whatsapp';
  metadata: WhatsAppMetadata;
  contacts?: WhatsAppContact[];
  messages?: WhatsAppInboundMessage[];
  statuses?: WhatsAppStatus[];
  errors?: WhatsAppStatusError[];
}

export interface WhatsAppWebhookBody {
  object: 'whatsapp_business_account';
  entry: Array<{ id: string; changes: Array<{ value: WhatsAppChangeValue; field: 'messages' }> }>;
}

/** Fields every inbound message builder accepts; `id` and `timestamp` default to fresh values. */
export interface WhatsAppMessageInput {
  /** The user's WhatsApp id (phone number digits). */
  from: string;
  id?: string;
  /** Unix seconds as a string, as Meta sends it. */
  timestamp?: string;
  /** Present when the user replied to a message. */
  context?: { from: string; id: string };
}

/** Media fields Meta sends for every media message; tests rarely care, so they default to plausible values. */
export interface WhatsAppMediaInput extends WhatsAppMessageInput {
  mediaId?: string;
  mimeType?: string;
  sha256?: string;
  /** Newer API versions add a download address; left out unless given. */
  url?: string;
}

const waBase = (input: WhatsAppMessageInput, type: string): WhatsAppInboundMessage => ({
  from: input.from,
  id: input.id ?? newWamid(),
  timestamp: input.timestamp ?? whatsappNow(),
  ...(input.context ? { context: input.context } : {}),
  type,
});

const waMedia = (input: WhatsAppMediaInput, defaultMime: string): Record<string, unknown> => ({
  mime_type: input.mimeType ?? defaultMime,
  sha256: input.sha256 ?? randomBytes(32).toString('base64'),
  id: input.mediaId ?? newGraphId(),
  ...(input.url ? { url: input.url } : {}),
});

// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/text
export const waText = (input: WhatsAppMessageInput & { body: string }): WhatsAppInboundMessage => ({
  ...waBase(input, 'text'),
  text: { body: input.body },
});

// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/image
export const waImage = (input: WhatsAppMediaInput & { caption?: string }): WhatsAppInboundMessage => ({
  ...waBase(input, 'image'),
  image: { ...(input.caption !== undefined ? { caption: input.caption } : {}), ...waMedia(input, 'image/jpeg') },
});

// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/video
export const waVideo = (input: WhatsAppMediaInput & { caption?: string }): WhatsAppInboundMessage => ({
  ...waBase(input, 'video'),
  video: { ...(input.caption !== undefined ? { caption: input.caption } : {}), ...waMedia(input, 'video/mp4') },
});

// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/audio
/** `voice` is true for a recording made with WhatsApp's voice-note button. */
export const waAudio = (input: WhatsAppMediaInput & { voice?: boolean }): WhatsAppInboundMessage => ({
  ...waBase(input, 'audio'),
  audio: { ...waMedia(input, 'audio/ogg; codecs=opus'), voice: input.voice ?? true },
});

// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/document
export const waDocument = (
  input: WhatsAppMediaInput & { filename: string; caption?: string },
): WhatsAppInboundMessage => ({
  ...waBase(input, 'document'),
  document: {
    ...(input.caption !== undefined ? { caption: input.caption } : {}),
    filename: input.filename,
    ...waMedia(input, 'application/pdf'),
  },
});

// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/sticker
export const waSticker = (input: WhatsAppMediaInput & { animated?: boolean }): WhatsAppInboundMessage => ({
  ...waBase(input, 'sticker'),
  sticker: { ...waMedia(input, 'image/webp'), animated: input.animated ?? false },
});

// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/location
/** A dropped pin carries only coordinates; a shared place adds name, address and sometimes a url. */
export const waLocation = (
  input: WhatsAppMessageInput & { latitude: number; longitude: number; name?: string; address?: string; url?: string },
): WhatsAppInboundMessage => ({
  ...waBase(input, 'location'),
  location: {
    ...(input.address !== undefined ? { address: input.address } : {}),
    latitude: input.latitude,
    longitude: input.longitude,
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.url !== undefined ? { url: input.url } : {}),
  },
});

// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/reaction
/** `messageId` is the wamid of the message reacted to; removing a reaction omits the emoji. */
export const waReaction = (
  input: WhatsAppMessageInput & { messageId: string; emoji?: string },
): WhatsAppInboundMessage => ({
  ...waBase(input, 'reaction'),
  reaction: { message_id: input.messageId, ...(input.emoji !== undefined ? { emoji: input.emoji } : {}) },
});

// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/unsupported
/**
 * What Meta posts for a message type Cloud API cannot carry (polls, edits, view-once…): type `unsupported` (older
 * versions said `unknown`) with Meta's message-type-unknown error, and newer versions name the original type under
 * `unsupported.type`.
 */
export type WhatsAppUnsupportedInput = WhatsAppMessageInput & {
  type?: 'unsupported' | 'unknown';
  unsupportedType?: string;
};

export const waUnsupported = (input: WhatsAppUnsupportedInput): WhatsAppInboundMessage => ({
  ...waBase(input, input.type ?? 'unsupported'),
  errors: [
    {
      code: 131051,
      title: 'Message type unknown',
      message: 'Message type unknown',
      error_data: { details: 'Message type is currently not supported.' },
    },
  ],
  ...(input.unsupportedType !== undefined ? { unsupported: { type: input.unsupportedType } } : {}),
});

const waMetadata = (phoneNumberId: string, displayPhoneNumber?: string): WhatsAppMetadata => ({
  display_phone_number: displayPhoneNumber ?? '15550783881',
  phone_number_id: phoneNumberId,
});

const waBody = (wabaId: string, value: WhatsAppChangeValue): WhatsAppWebhookBody => ({
  object: 'whatsapp_business_account',
  entry: [{ id: wabaId, changes: [{ value, field: 'messages' }] }],
});

export interface WhatsAppInboundInput {
  wabaId?: string;
  phoneNumberId: string;
  displayPhoneNumber?: string;
  /** Senders' profiles; Meta omits `profile` when the user shares no name. */
  contacts: Array<{ waId: string; name?: string }>;
  messages: WhatsAppInboundMessage[];
}

// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages
/** A `messages` webhook carrying users' messages to the business number. */
export function whatsappInbound(input: WhatsAppInboundInput): WhatsAppWebhookBody {
  return waBody(input.wabaId ?? DEFAULT_WABA_ID, {
    messaging_product: 'whatsapp',
    metadata: waMetadata(input.phoneNumberId, input.displayPhoneNumber),
    contacts: input.contacts.map((c) => ({
      ...(c.name !== undefined ? { profile: { name: c.name } } : {}),
      wa_id: c.waId,
    })),
    messages: input.messages,
  });
}

export interface WhatsAppStatusInput {
  /** The wamid the send answered with. */
  id: string;
  status: WhatsAppStatus['status'];
  recipientId: string;
  timestamp?: string;
  /** For `failed`: Meta's error objects, `details` going to `error_data.details`. */
  errors?: Array<{ code: number; title: string; message?: string; details?: string }>;
  /**
   * Billing Meta attaches to sent/delivered statuses; `null` leaves it out. Defaults to a per-message-pricing service
   * message.
   */
  pricing?: WhatsAppStatus['pricing'] | null;
}

export interface WhatsAppStatusesInput {
  wabaId?: string;
  phoneNumberId: string;
  displayPhoneNumber?: string;
  statuses: WhatsAppStatusInput[];
}

// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/status
/** A `messages` webhook carrying delivery statuses of the business's own sends. */
export function whatsappStatuses(input: WhatsAppStatusesInput): WhatsAppWebhookBody {
  return waBody(input.wabaId ?? DEFAULT_WABA_ID, {
    messaging_product: 'whatsapp',
    metadata: waMetadata(input.phoneNumberId, input.displayPhoneNumber),
    statuses: input.statuses.map((s) => {
      const pricing =
        s.pricing === undefined
          ? s.status === 'sent' || s.status === 'delivered'
            ? { billable: true, pricing_model: 'PMP', category: 'service' }
            : undefined
          : (s.pricing ?? undefined);
      return {
        id: s.id,
        status: s.status,
        timestamp: s.timestamp ?? whatsappNow(),
        recipient_id: s.recipientId,
        ...(pricing ? { pricing } : {}),
        ...(s.errors
          ? {
              errors: s.errors.map((e) => ({
                code: e.code,
                title: e.title,
                message: e.message ?? e.title,
                ...(e.details !== undefined ? { error_data: { details: e.details } } : {}),
                href: 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/',
              })),
            }
          : {}),
      };
    }),
  });
}

// https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/errors
/** A `messages` webhook reporting an app- or account-level error not tied to one message. */
export function whatsappErrors(input: {
  wabaId?: string;
  phoneNumberId: string;
  displayPhoneNumber?: string;
  errors: Array<{ code: number; title: string; message?: string; details?: string }>;
}): WhatsAppWebhookBody {
  return waBody(input.wabaId ?? DEFAULT_WABA_ID, {
    messaging_product: 'whatsapp',
    metadata: waMetadata(input.phoneNumberId, input.displayPhoneNumber),
    errors: input.errors.map((e) => ({
      code: e.code,
      title: e.title,
      message: e.message ?? e.title,
      ...(e.details !== undefined ? { error_data: { details: e.details } } : {}),
    })),
  });
}

// Messenger and Instagram ---------------------------------------------------------------------------------------------

export interface MessagingEvent {
  sender: { id: string };
  recipient: { id: string };
  timestamp?: number;
  [field: string]: unknown;
}

export interface MessagingWebhookBody {
  object: 'page' | 'instagram';
  entry: Array<{ id: string; time: number; messaging: MessagingEvent[] }>;
}

/** Common fields: `from` is the customer's scoped id (PSID or IGSID), `to` the Page or Instagram account id. */
export interface MessagingEventInput {
  from: string;
  to: string;
  /** Unix milliseconds, as Meta sends it. */
  timestamp?: number;
}

export type MessagingAttachmentType = 'image' | 'video' | 'audio' | 'file' | 'reel' | 'ig_reel' | 'fallback';

const messagingBase = (input: MessagingEventInput): MessagingEvent => ({
  sender: { id: input.from },
  recipient: { id: input.to },
  timestamp: input.timestamp ?? messagingNow(),
});

// https://developers.facebook.com/documentation/business-messaging/messenger-platform/webhooks/webhook-events/messages
/** A customer's text message (Messenger, and Instagram which uses the same event). */
export const messagingText = (input: MessagingEventInput & { text: string; mid?: string }): MessagingEvent => ({
  ...messagingBase(input),
  message: { mid: input.mid ?? newMid(), text: input.text },
});

// https://developers.facebook.com/documentation/business-messaging/messenger-platform/webhooks/webhook-events/messages
/** A customer's message with attachments; each carries only its `type` and `payload.url`. */
export const messagingAttachments = (
  input: MessagingEventInput & {
    attachments: Array<{ type: MessagingAttachmentType; url: string }>;
    text?: string;
    mid?: string;
  },
): MessagingEvent => ({
  ...messagingBase(input),
  message: {
    mid: input.mid ?? newMid(),
    ...(input.text !== undefined ? { text: input.text } : {}),
    attachments: input.attachments.map((a) => ({ type: a.type, payload: { url: a.url } })),
  },
});

// https://developers.facebook.com/documentation/business-messaging/messenger-platform/webhooks/webhook-events/messages
/**
 * A Messenger sticker (the thumbs-up button is one too): the long-standing form is an `image` attachment whose payload
 * adds `sticker_id`, next to `message.sticker_id`; during Meta's transition a second `sticker` attachment rides along.
 */
export const messengerSticker = (
  input: MessagingEventInput & { stickerId: number; url: string; mid?: string; withStickerAttachment?: boolean },
): MessagingEvent => ({
  ...messagingBase(input),
  message: {
    mid: input.mid ?? newMid(),
    sticker_id: input.stickerId,
    attachments: [
      { type: 'image', payload: { url: input.url, sticker_id: input.stickerId } },
      ...(input.withStickerAttachment
        ? [{ type: 'sticker', payload: { url: input.url, sticker_id: input.stickerId } }]
        : []),
    ],
  },
});

// https://developers.facebook.com/documentation/business-messaging/messenger-platform/webhooks/webhook-events/message-reactions
/** A customer reacting to (or un-reacting from) one of the Page's messages. */
export const messagingReaction = (
  input: MessagingEventInput & { mid: string; emoji: string; reaction?: string; action?: 'react' | 'unreact' },
): MessagingEvent => ({
  ...messagingBase(input),
  reaction: {
    reaction: input.reaction ?? 'other',
    emoji: input.emoji,
    action: input.action ?? 'react',
    mid: input.mid,
  },
});

// https://developers.facebook.com/documentation/business-messaging/messenger-platform/webhooks/webhook-events/message-deliveries
/**
 * Messenger's delivery receipt: `watermark` (ms) is always there, `mids` only sometimes, and Meta's example has no
 * event `timestamp`, so none is added unless given. Instagram sends no delivery receipts.
 */
export const messengerDelivery = (
  input: Omit<MessagingEventInput, 'timestamp'> & { mids?: string[]; watermark?: number; timestamp?: number },
) => {
  const event: MessagingEvent = {
    sender: { id: input.from },
    recipient: { id: input.to },
    ...(input.timestamp !== undefined ? { timestamp: input.timestamp } : {}),
    delivery: { ...(input.mids ? { mids: input.mids } : {}), watermark: input.watermark ?? messagingNow() },
  };
  return event;
};

// https://developers.facebook.com/documentation/business-messaging/messenger-platform/webhooks/webhook-events/message-reads
/** Messenger's read receipt: every Page message sent at or before `watermark` (ms) was read. */
export const messengerRead = (input: MessagingEventInput & { watermark?: number }): MessagingEvent => ({
  ...messagingBase(input),
  read: { watermark: input.watermark ?? messagingNow() },
});

// https://developers.facebook.com/documentation/business-messaging/instagram-messaging/webhooks (messaging_seen)
/** Instagram's read receipt names the message read instead of a watermark. */
export const instagramRead = (input: MessagingEventInput & { mid: string }): MessagingEvent => ({
  ...messagingBase(input),
  read: { mid: input.mid },
});

/**
 * Meta puts one event in each entry's `messaging` array (the array "will only contain one messaging object"), so
 * several events become several entries of one body.
 */
const messagingBody = (
  object: 'page' | 'instagram',
  accountId: string,
  events: MessagingEvent[],
  time?: number,
): MessagingWebhookBody => ({
  object,
  entry: events.map((event) => ({ id: accountId, time: time ?? messagingNow(), messaging: [event] })),
});

// https://developers.facebook.com/documentation/business-messaging/messenger-platform/webhooks
/** A Messenger (`object: 'page'`) webhook for a Page, one entry per event. */
export function messengerInbound(input: {
  pageId: string;
  events: MessagingEvent[];
  time?: number;
}): MessagingWebhookBody {
  return messagingBody('page', input.pageId, input.events, input.time);
}

// https://developers.facebook.com/documentation/business-messaging/instagram-messaging/webhooks
/** An Instagram (`object: 'instagram'`) messaging webhook for a professional account, one entry per event. */
export function instagramInbound(input: {
  igId: string;
  events: MessagingEvent[];
  time?: number;
}): MessagingWebhookBody {
  return messagingBody('instagram', input.igId, input.events, input.time);
}

// Batching ------------------------------------------------------------------------------------------------------------

/**
 * Several bodies of one `object` merged into one POST, as Meta batches busy traffic. With `sameEntry` (WhatsApp only)
 * changes for the same account id are folded into one entry's `changes`, the other shape Meta uses.
 */
export function batchWebhooks(bodies: WhatsAppWebhookBody[], options?: { sameEntry?: boolean }): WhatsAppWebhookBody;
export function batchWebhooks(bodies: MessagingWebhookBody[]): MessagingWebhookBody;
export function batchWebhooks(
  bodies: WhatsAppWebhookBody[] | MessagingWebhookBody[],
  options: { sameEntry?: boolean } = {},
): WhatsAppWebhookBody | MessagingWebhookBody {
  const [first] = bodies;
  if (!first) throw new Error('batchWebhooks needs at least one body');
  if (bodies.some((b) => b.object !== first.object))
    throw new Error('batchWebhooks: every body must have the same object');
  if (first.object !== 'whatsapp_business_account') {
    return { object: first.object, entry: (bodies as MessagingWebhookBody[]).flatMap((b) => b.entry) };
  }
  const entries: WhatsAppWebhookBody['entry'] = [];
  for (const body of bodies as WhatsAppWebhookBody[]) {
    for (const entry of body.entry) {
      const existing = options.sameEntry ? entries.find((e) => e.id === entry.id) : undefined;
      if (existing) existing.changes.push(...entry.changes);
      else entries.push({ id: entry.id, changes: [...entry.changes] });
    }
  }
  return { object: 'whatsapp_business_account', entry: entries };
}
