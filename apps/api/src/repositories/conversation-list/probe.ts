import type { TenantScope } from '../tenant.js';
import { type ConversationFilter, isNarrowed } from './filter.js';
import type { SearchContacts } from './given-contacts.js';
import { conversationsOfContacts, countOf, offsetOf, pageOf, pageShape } from './rows.js';
import type { ConversationWithContact, ListResult, Page } from './types.js';

/**
 * Any search the other plans do not answer (many contacts, a filter): the matching contacts'
 * conversations, one probe of `conversations_contact_idx` per contact, sorted. No benchmark target
 * needs it; it is the general way, and the one the others must agree with.
 */
export async function probePage(
  scope: TenantScope,
  filter: ConversationFilter & { search: string },
  page: Page,
  found: Pick<SearchContacts, 'conversations'>,
): Promise<ListResult> {
  // Without a filter the contacts' own counts are the exact total.
  const total = isNarrowed(filter) ? await countOf(conversationsOfContacts(scope, filter)) : found.conversations;
  if (total <= page.offset) return { rows: [], total };
  const rows = (await pageOf(
    scope,
    conversationsOfContacts(scope, filter),
    'sorted',
    pageShape(page),
    offsetOf(page),
  ).execute()) as ConversationWithContact[];
  return { rows, total };
}
