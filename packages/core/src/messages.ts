import * as z from 'zod';
import { Id, Timestamp, listOf, pagination, text } from './common.js';

export const MessageType = z.enum(['text']).meta({ id: 'MessageType' });
export const MessageDirection = z.enum(['inbound', 'outbound']);
export const MessageStatus = z.enum(['queued', 'sent', 'delivered', 'read', 'failed']);

export const Message = z
  .object({
    id: Id,
    conversation_id: Id,
    direction: MessageDirection,
    type: MessageType,
    content: z.string(),
    status: MessageStatus,
    created_at: Timestamp,
  })
  .meta({ id: 'Message' });
export type Message = z.infer<typeof Message>;

export const MessageList = listOf(Message, 'MessageList');
export type MessageList = z.infer<typeof MessageList>;

export const MessageContent = text(1, 4096);

/**
 * `message` is the deprecated alias of `content`; both may be sent only when equal.
 * The parsed body always carries `content`.
 */
export const SendMessageBody = z
  .strictObject({
    conversation_id: Id,
    content: MessageContent.optional(),
    message: MessageContent.optional().meta({ deprecated: true, description: 'Deprecated alias of `content`.' }),
    type: MessageType.default('text'),
  })
  .check((ctx) => {
    const { content, message } = ctx.value;
    if (content === undefined && message === undefined) {
      ctx.issues.push({ code: 'invalid_type', expected: 'string', path: ['content'], input: undefined, message: 'content is required' });
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
  .transform(({ conversation_id, content, message, type }) => ({ conversation_id, type, content: (content ?? message) as string }))
  // The check above in JSON Schema terms, so that the document does not call `{conversation_id}` alone valid.
  .meta({ id: 'SendMessageBody', anyOf: [{ required: ['content'] }, { required: ['message'] }] });
export type SendMessageBody = z.input<typeof SendMessageBody>;

export const ListMessagesQuery = z.strictObject({ ...pagination });
export type ListMessagesQuery = z.input<typeof ListMessagesQuery>;
