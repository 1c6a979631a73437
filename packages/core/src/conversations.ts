import * as z from 'zod';
import { ConversationStatus, Id, Platform, Search, Timestamp, listOf, pagination } from './common.js';

export const Conversation = z
  .object({
    id: Id,
    contact: z.object({
      id: Id,
      name: z.string().nullable(),
      phone: z.string().nullable(),
    }),
    platform: Platform,
    channel_id: Id.nullable().meta({
      description: 'The channel the conversation runs on; `null` when opened through the API or the sandbox.',
    }),
    status: ConversationStatus,
    message_count: z.int().min(0),
    last_message: z
      .object({
        content: z.string(),
        timestamp: Timestamp,
      })
      .nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Conversation' });
export type Conversation = z.infer<typeof Conversation>;

export const ConversationList = listOf(Conversation, 'ConversationList');
export type ConversationList = z.infer<typeof ConversationList>;

export const ListConversationsQuery = z.strictObject({
  status: ConversationStatus.optional(),
  platform: Platform.optional(),
  contact_id: Id.optional().meta({ description: "Only this contact's conversations." }),
  search: Search.optional(),
  ...pagination,
});
export type ListConversationsQuery = z.input<typeof ListConversationsQuery>;

export const CreateConversationBody = z
  .strictObject({
    contact_id: Id,
    platform: Platform,
  })
  .meta({ id: 'CreateConversationBody' });
export type CreateConversationBody = z.input<typeof CreateConversationBody>;

export const UpdateConversationBody = z
  .strictObject({
    status: ConversationStatus.optional(),
  })
  .meta({ id: 'UpdateConversationBody' });
export type UpdateConversationBody = z.input<typeof UpdateConversationBody>;

/** Allowed status changes. `archived` is final; setting the current status is a no-op. */
export const CONVERSATION_TRANSITIONS: Record<ConversationStatus, readonly ConversationStatus[]> = {
  active: ['resolved', 'archived'],
  resolved: ['active', 'archived'],
  archived: [],
};

export const ConversationIdParams = z.strictObject({ id: Id });
