import * as z from 'zod';
import { Id, Timestamp, listOf, pagination, text } from './common.js';

/** What a message holds. Inbound messages may have any type; `text` and `template` can be sent. */
export const MessageType = z
  .enum(['text', 'template', 'image', 'video', 'audio', 'document', 'sticker', 'location', 'reaction', 'unsupported'])
  .meta({ id: 'MessageType' });
export type MessageType = z.infer<typeof MessageType>;
export const SendableMessageType = z.enum(['text', 'template']).meta({ id: 'SendableMessageType' });
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

/**
 * `message` is the deprecated alias of `content`; both may be sent only when equal.
 * The parsed body always carries `content` (a template's name for `template`).
 */
export const SendMessageBody = z
  .strictObject({
    conversation_id: Id,
    content: MessageContent.optional().meta({ description: 'Required for `text`.' }),
    message: MessageContent.optional().meta({ deprecated: true, description: 'Deprecated alias of `content`.' }),
    type: SendableMessageType.default('text'),
    template: MessageTemplate.optional().meta({
      description: 'Required for `template` (WhatsApp only); not allowed otherwise.',
    }),
  })
  .check((ctx) => {
    const { content, message, type, template } = ctx.value;
    if (type === 'template') {
      if (template === undefined) {
        ctx.issues.push({
          code: 'invalid_type',
          expected: 'object',
          path: ['template'],
          input: undefined,
          message: 'template is required',
        });
      } else if (content !== undefined || message !== undefined) {
        ctx.issues.push({
          code: 'unrecognized_keys',
          keys: [content !== undefined ? 'content' : 'message'],
          input: ctx.value,
          message: 'A template message takes no content',
        });
      }
    } else if (template !== undefined) {
      ctx.issues.push({
        code: 'unrecognized_keys',
        keys: ['template'],
        input: ctx.value,
        message: 'template goes only with type "template"',
      });
    } else if (content === undefined && message === undefined) {
      ctx.issues.push({
        code: 'invalid_type',
        expected: 'string',
        path: ['content'],
        input: undefined,
        message: 'content is required',
      });
    } else if (content !== undefined && message !== undefined && content !== message) {
      ctx.issues.push({
        code: 'custom',
        path: ['message'],
        params: { constraint: 'unique' },
        input: message,
        message: 'content and its alias message differ; send one of them',
      });
    }
  })
  .transform(({ conversation_id, content, message, type, template }) =>
    type === 'template'
      ? { conversation_id, type, content: (template as MessageTemplate).name, template: template as MessageTemplate }
      : { conversation_id, type, content: (content ?? message) as string },
  )
  // The check above in JSON Schema terms, so the document does not call `{conversation_id}` alone valid.
  .meta({
    id: 'SendMessageBody',
    anyOf: [{ required: ['content'] }, { required: ['message'] }, { required: ['template'] }],
    // `template` goes with `type: "template"` and nothing else does: the rest of the check above.
    allOf: [
      {
        if: { properties: { type: { const: 'template' } }, required: ['type'] },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's own keyword, not a thenable.
        then: { required: ['template'], properties: { content: false, message: false } },
        else: { properties: { template: false } },
      },
    ],
  });
export type SendMessageBody = z.input<typeof SendMessageBody>;

export const ListMessagesQuery = z.strictObject({ ...pagination });
export type ListMessagesQuery = z.input<typeof ListMessagesQuery>;

export const MessageIdParams = z.strictObject({ id: Id });
