import type { TenantScope } from '../tenant.js';
import { countersPage } from './counters-page.js';
import { type ConversationFilter, isNarrowed } from './filter.js';
import { contactPage, givenCount, givenPage, searchContacts } from './given-contacts.js';
import { planList } from './plan.js';
import { probePage } from './probe.js';
import { trigramPage } from './trigram.js';
import type { ListResult, Page } from './types.js';

/** A page of conversations, latest activity first, and the exact number the filter selects: planList's plan, run. */
export async function listConversations(
  scope: TenantScope,
  filter: ConversationFilter,
  page: Page,
): Promise<ListResult> {
  const { search } = filter;
  if (planList(filter) === 'contact') return contactPage(scope, filter, filter.contactId as string, page);
  if (planList(filter) === 'counters' || search === undefined) return countersPage(scope, filter, page);
  const searched = { ...filter, search };
  let trigramDeclined = false;
  if (planList(searched) === 'trigram') {
    const found = await trigramPage(scope, search, page);
    if (found) return found;
    trigramDeclined = true;
  }
  const narrowed = isNarrowed(filter);
  const contacts = await searchContacts(scope, searched, narrowed ? undefined : page);
  if (contacts.contacts === 0) return { rows: [], total: 0 };
  if (planList(searched, { trigramDeclined, contacts: contacts.contacts }) === 'probe')
    return probePage(scope, searched, page, contacts);
  if (contacts.page) return { rows: contacts.page, total: contacts.conversations };
  return givenContactsPage(scope, searched, page, contacts, narrowed);
}

/**
 * The given plan's page. With a filter, a page that is neither full nor past the end tells the
 * exact total itself (offset + its rows); otherwise the total is counted over the given contacts.
 */
async function givenContactsPage(
  scope: TenantScope,
  filter: ConversationFilter & { search: string },
  page: Page,
  contacts: Awaited<ReturnType<typeof searchContacts>>,
  narrowed: boolean,
): Promise<ListResult> {
  const ids = contacts.ids as string[] | string;
  if (!narrowed) {
    if (contacts.conversations <= page.offset) return { rows: [], total: contacts.conversations };
    return { rows: await givenPage(scope, filter, ids, page), total: contacts.conversations };
  }
  const rows = await givenPage(scope, filter, ids, page);
  if (rows.length < page.limit && (rows.length > 0 || page.offset === 0))
    return { rows, total: page.offset + rows.length };
  return { rows, total: await givenCount(scope, filter, ids) };
}
