import * as z from 'zod';
import { Id, type Platform, Timestamp, listOf, pagination, text } from './common.js';
import { WebhookUrl } from './webhooks.js';

/** What a message holds. Inbound messages may have any type; text, templates and the four media types can be sent. */
export const MessageType = z
  .enum(['text', 'template', 'image', 'video', 'audio', 'document', 'sticker', 'location', 'reaction', 'unsupported'])
  .meta({ id: 'MessageType' });
export type MessageType = z.infer<typeof MessageType>;
export const SendableMessageType = z
  .enum(['text', 'template', 'image', 'video', 'audio', 'document'])
  .meta({ id: 'SendableMessageType' });
/** The types a message with a file or a link goes out as. */
export const MEDIA_MESSAGE_TYPES = ['image', 'video', 'audio', 'document'] as const;
export type MediaMessageType = (typeof MEDIA_MESSAGE_TYPES)[number];
const isMediaType = (type: string): type is MediaMessageType =>
  (MEDIA_MESSAGE_TYPES as readonly string[]).includes(type);
export const MessageDirection = z.enum(['inbound', 'outbound']);
export const MessageStatus = z.enum(['queued', 'sent', 'delivered', 'read', 'failed']);

/** Why the platform did not take or deliver a message: the Graph API error's code (as a string) and message. */
export const MessageError = z.object({ code: z.string(), message: z.string() }).meta({ id: 'MessageError' });

/** The platform's reference to a picture, a recording or a file, as its webhook gave it. */
export const PlatformMedia = z.object({
  id: z.string().meta({
    description: "WhatsApp's media id; for Messenger and Instagram, which send a link, the attachment's URL.",
  }),
  mime_type: z
    .string()
    .meta({ description: 'As the platform gave it; for Messenger and Instagram the kind of media (`image/*`, …).' }),
  filename: z.string().optional(),
});
export type PlatformMedia = z.infer<typeof PlatformMedia>;

/** Where Convo's copy of a message's media stands: fetched from the platform after the message arrived. */
export const MediaStatus = z.enum(['pending', 'stored', 'failed', 'too_large']).meta({ id: 'MediaStatus' });

/**
 * A message's media: the platform's reference, and the file Convo keeps of it once downloaded. The
 * optional `filename` comes last, where the hot routes' compiled serializer writes it too.
 */
export const MessageMedia = z
  .object({
    id: PlatformMedia.shape.id,
    mime_type: PlatformMedia.shape.mime_type,
    file_id: Id.nullable().meta({
      description: 'The file Convo keeps of it (`GET /v1/files/{id}/content`); `null` until `status` is `stored`.',
    }),
    status: MediaStatus.meta({
      description:
        '`pending` while the worker downloads it (a `message.updated` event follows), then `stored`, `too_large` (over 100 MiB) or `failed`.',
    }),
    error: MessageError.nullable().meta({ description: "Why it could not be stored: the platform's error." }),
    filename: PlatformMedia.shape.filename,
  })
  .meta({ id: 'MessageMedia' });
export type MessageMedia = z.infer<typeof MessageMedia>;

export const Message = z
  .object({
    id: Id,
    conversation_id: Id,
    direction: MessageDirection,
    type: MessageType,
    content: z
      .string()
      .meta({ description: "The text, a media's caption, a reaction's emoji, a template's name; may be empty." }),
    status: MessageStatus,
    platform_message_id: z
      .string()
      .nullable()
      .meta({ description: 'The id the platform gave the message; `null` until it accepts it.' }),
    error: MessageError.nullable(),
    media: MessageMedia.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Message' });
export type Message = z.infer<typeof Message>;

export const MessageList = listOf(Message, 'MessageList');
export type MessageList = z.infer<typeof MessageList>;

export const MessageContent = text(1, 4096);

const Scalar = z.union([z.string().max(4096), z.number(), z.boolean()]);

/**
 * One part of a template's variables in WhatsApp's own shape, e.g. `{type: "body", parameters: [{type: "text",
 * text: "Ana"}]}`; a parameter's media or currency nests one level deeper (`{type: "image", image: {link}}`).
 */
export const TemplateComponent = z
  .strictObject({
    type: z.enum(['header', 'body', 'button']),
    sub_type: z.string().max(32).optional().meta({ description: 'For a button: `quick_reply`, `url`, …' }),
    index: z
      .union([z.int().min(0).max(9), z.string().max(1)])
      .optional()
      .meta({ description: 'For a button: its position.' }),
    parameters: z
      .array(z.record(z.string(), z.union([Scalar, z.record(z.string(), Scalar)])))
      .max(20)
      .optional(),
  })
  .meta({ id: 'TemplateComponent' });

/** A WhatsApp message template approved in the WhatsApp Manager, sendable outside the 24-hour window. */
export const MessageTemplate = z
  .strictObject({
    name: text(1, 512).regex(/^[a-z0-9_]+$/, {
      message: 'Lower-case letters, digits and "_", as WhatsApp names templates',
    }),
    language: text(2, 15)
      .regex(/^[a-z]{2,3}(?:_[A-Za-z0-9]{2,8})?$/, {
        message: 'A language code as WhatsApp writes it (`en`, `en_US`, `pt_BR`)',
      })
      .meta({ example: 'en_US' }),
    components: z
      .array(TemplateComponent)
      .max(20)
      .optional()
      .meta({ description: "The values of the template's variables, passed to WhatsApp as they are." }),
  })
  .meta({ id: 'MessageTemplate' });
export type MessageTemplate = z.infer<typeof MessageTemplate>;

/** What a media message sends: a file kept by Convo (`POST /v1/files`), or a link the worker fetches. */
export const OutboundMedia = z
  .strictObject({
    file_id: Id.optional().meta({ description: 'A file uploaded with `POST /v1/files`.' }),
    url: WebhookUrl.optional().meta({
      description: 'An https address on the public internet; the worker fetches it, keeps it as a file and sends that.',
    }),
  })
  .check((ctx) => {
    const { file_id, url } = ctx.value;
    if (file_id === undefined && url === undefined)
      ctx.issues.push({
        code: 'invalid_type',
        expected: 'string',
        path: ['file_id'],
        input: undefined,
        message: 'media needs file_id or url',
      });
    else if (file_id !== undefined && url !== undefined)
      ctx.issues.push({
        code: 'unrecognized_keys',
        keys: ['url'],
        input: ctx.value,
        message: 'media takes file_id or url, not both',
      });
  })
  .meta({
    id: 'OutboundMedia',
    oneOf: [
      { required: ['file_id'], not: { required: ['url'] } },
      { required: ['url'], not: { required: ['file_id'] } },
    ],
  });
export type OutboundMedia = z.infer<typeof OutboundMedia>;

const MiB = 1024 * 1024;

/** How large, and of which media types, a platform takes each kind of media; `null`: any type. */
export interface MediaRule {
  maxBytes: number;
  mimeTypes: readonly string[] | null;
}

/**
 * What each platform takes (CONTRACT: Files and media), checked before a media message is accepted.
 * WhatsApp: https://developers.facebook.com/documentation/business-messaging/whatsapp/business-phone-numbers/media
 * Messenger: https://developers.facebook.com/docs/messenger-platform/send-messages#sending_attachments
 * Instagram: https://developers.facebook.com/docs/messenger-platform/instagram/features/send-message
 */
export const MEDIA_RULES: Record<Platform, Record<MediaMessageType, MediaRule>> = {
  whatsapp: {
    image: { maxBytes: 5 * MiB, mimeTypes: ['image/jpeg', 'image/png'] },
    video: { maxBytes: 16 * MiB, mimeTypes: ['video/mp4', 'video/3gpp'] },
    audio: { maxBytes: 16 * MiB, mimeTypes: ['audio/aac', 'audio/mp4', 'audio/mpeg', 'audio/amr', 'audio/ogg'] },
    document: { maxBytes: 100 * MiB, mimeTypes: null },
  },
  facebook: {
    image: { maxBytes: 25 * MiB, mimeTypes: ['image/jpeg', 'image/png', 'image/gif'] },
    video: {
      maxBytes: 25 * MiB,
      mimeTypes: ['video/mp4', 'video/ogg', 'video/quicktime', 'video/webm', 'video/x-msvideo'],
    },
    audio: { maxBytes: 25 * MiB, mimeTypes: ['audio/aac', 'audio/mp4', 'audio/x-m4a', 'audio/mpeg', 'audio/wav'] },
    document: { maxBytes: 25 * MiB, mimeTypes: null },
  },
  instagram: {
    image: { maxBytes: 8 * MiB, mimeTypes: ['image/jpeg', 'image/png', 'image/gif'] },
    video: {
      maxBytes: 25 * MiB,
      mimeTypes: ['video/mp4', 'video/ogg', 'video/quicktime', 'video/webm', 'video/x-msvideo'],
    },
    audio: { maxBytes: 25 * MiB, mimeTypes: ['audio/aac', 'audio/mp4', 'audio/x-m4a', 'audio/wav'] },
    document: { maxBytes: 25 * MiB, mimeTypes: ['application/pdf'] },
  },
};

/** A media type as the rules compare it: lower case, without parameters (`audio/ogg; codecs=opus` is `audio/ogg`). */
export const bareMimeType = (mimeType: string): string => (mimeType.split(';')[0] ?? '').trim().toLowerCase();

/** Why a platform refuses this media, or undefined when it takes it. */
export function mediaProblem(
  platform: Platform,
  type: MediaMessageType,
  media: { mime_type: string; size: number | null },
): { constraint: 'format' | 'max'; message: string } | undefined {
  const rule = MEDIA_RULES[platform][type];
  const mime = bareMimeType(media.mime_type);
  if (rule.mimeTypes && !rule.mimeTypes.includes(mime))
    return {
      constraint: 'format',
      message: `${platform} sends ${type} only as ${rule.mimeTypes.join(', ')}; this is ${mime}`,
    };
  if (media.size !== null && media.size > rule.maxBytes)
    return {
      constraint: 'max',
      message: `${platform} sends ${type} of at most ${rule.maxBytes / MiB} MiB; this is ${media.size} bytes`,
    };
  return undefined;
}

/**
 * `message` is the deprecated alias of `content`; both may be sent only when equal.
 * The parsed body always carries `content` (a template's name for `template`).
 */
export const SendMessageBody = z
  .strictObject({
    conversation_id: Id,
    content: MessageContent.optional().meta({
      description: "Required for `text`; a media message's caption (not for `audio`); not for `template`.",
    }),
    message: MessageContent.optional().meta({ deprecated: true, description: 'Deprecated alias of `content`.' }),
    type: SendableMessageType.default('text'),
    template: MessageTemplate.optional().meta({
      description: 'Required for `template` (WhatsApp only); not allowed otherwise.',
    }),
    media: OutboundMedia.optional().meta({
      description:
        "Required for `image`, `video`, `audio` and `document`; not allowed otherwise. Checked against the platform's type and size rules before the message is accepted.",
    }),
  })
  .check((ctx) => {
    const { content, message, type, template, media } = ctx.value;
    const missing = (field: string, expected: 'object' | 'string', text: string): void => {
      ctx.issues.push({ code: 'invalid_type', expected, path: [field], input: undefined, message: text });
    };
    const extra = (key: string, text: string): void => {
      ctx.issues.push({ code: 'unrecognized_keys', keys: [key], input: ctx.value, message: text });
    };
    const caption = content ?? message;
    if (content !== undefined && message !== undefined && content !== message) {
      ctx.issues.push({
        code: 'custom',
        path: ['message'],
        params: { constraint: 'unique' },
        input: message,
        message: 'content and its alias message differ; send one of them',
      });
      return;
    }
    if (type !== 'template' && template !== undefined)
      return extra('template', 'template goes only with type "template"');
    if (!isMediaType(type) && media !== undefined)
      return extra('media', 'media goes only with type image, video, audio or document');
    if (type === 'template') {
      if (template === undefined) missing('template', 'object', 'template is required');
      else if (caption !== undefined)
        extra(content !== undefined ? 'content' : 'message', 'A template message takes no content');
    } else if (isMediaType(type)) {
      if (media === undefined) missing('media', 'object', `media is required for type "${type}"`);
      else if (type === 'audio' && caption !== undefined)
        extra(content !== undefined ? 'content' : 'message', 'An audio message takes no caption');
    } else if (caption === undefined) missing('content', 'string', 'content is required');
  })
  // Runs after a failed check too (its issues do not abort), so it reads nothing the check may have found missing.
  .transform(({ conversation_id, content, message, type, template, media }) => {
    if (type === 'template')
      return { conversation_id, type, content: template?.name ?? '', template: template as MessageTemplate };
    if (isMediaType(type))
      return { conversation_id, type, content: content ?? message ?? '', media: media as OutboundMedia };
    return { conversation_id, type, content: (content ?? message) as string };
  })
  // The check above in JSON Schema terms, so the document does not call `{conversation_id}` alone valid.
  .meta({
    id: 'SendMessageBody',
    anyOf: [{ required: ['content'] }, { required: ['message'] }, { required: ['template'] }, { required: ['media'] }],
    // `template` goes with `type: "template"` and `media` with the media types, and nothing else does.
    allOf: [
      {
        if: { properties: { type: { const: 'template' } }, required: ['type'] },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's own keyword, not a thenable.
        then: { required: ['template'], properties: { content: false, message: false } },
        else: { properties: { template: false } },
      },
      {
        if: { properties: { type: { enum: [...MEDIA_MESSAGE_TYPES] } }, required: ['type'] },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's own keyword, not a thenable.
        then: { required: ['media'] },
        else: { properties: { media: false } },
      },
      {
        if: { properties: { type: { const: 'audio' } }, required: ['type'] },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's own keyword, not a thenable.
        then: { properties: { content: false, message: false } },
      },
    ],
  });
export type SendMessageBody = z.input<typeof SendMessageBody>;

export const ListMessagesQuery = z.strictObject({ ...pagination });
export type ListMessagesQuery = z.input<typeof ListMessagesQuery>;

export const MessageIdParams = z.strictObject({ id: Id });
