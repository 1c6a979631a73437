import type { ContactRow } from '../repositories/contacts.js';
import type { ConversationRow } from '../repositories/conversations.js';

/**
 * Rows as the tables hold them, for tests that write them directly (a data set of a given shape,
 * or a schema before its latest migration): only what a test varies is named, the rest is what a
 * new row holds.
 */

/** A contact with this name and phone, created (and last updated) at `at`. */
export const contactRow = (
  accountId: string,
  fields: { id: string; name: string | null; phone: string; at: string; tags?: string[] },
): Omit<ContactRow, 'conversation_count' | 'identities'> => ({
  account_id: accountId,
  id: fields.id,
  name: fields.name,
  name_search: fields.name?.toLowerCase() ?? null,
  phone: fields.phone,
  phone_digits: fields.phone.replace(/\D/g, ''),
  email: null,
  email_search: null,
  tags: JSON.stringify(fields.tags ?? []),
  attributes: '{}',
  created_at: fields.at,
  updated_at: fields.at,
});

/** A conversation without messages, created and last active at `at` (WhatsApp, active unless said). */
export const conversationRow = (
  accountId: string,
  fields: {
    id: string;
    contact_id: string;
    at: string;
    platform?: ConversationRow['platform'];
    status?: ConversationRow['status'];
  },
): Omit<ConversationRow, 'channel_id'> => ({
  account_id: accountId,
  id: fields.id,
  contact_id: fields.contact_id,
  platform: fields.platform ?? 'whatsapp',
  status: fields.status ?? 'active',
  message_count: 0,
  last_message_content: null,
  last_message_at: null,
  last_activity_at: fields.at,
  event_sequence: 0,
  created_at: fields.at,
  updated_at: fields.at,
});
