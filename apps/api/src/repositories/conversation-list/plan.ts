import { type ConversationFilter, isNarrowed } from './filter.js';
import type { Page } from './types.js';

/**
 * The plans that answer a conversation list, one file each:
 * - `contact`: one contact's conversations, whatever else the list selects;
 * - `counters`: no search; the total from the counters, the page's ids from a status/platform index;
 * - `trigram`: a three-character name search, no filter; the total from the trigram counts, the page
 *   walked along the activity index;
 * - `given`: a search whose contacts are few; their conversations sorted, by the contacts' ids;
 * - `probe`: any other search; the matching contacts' conversations, sorted.
 * `contacts` is not a plan but the step before `given` or `probe`: read the search's contacts.
 */
export type ListPlan = 'contact' | 'counters' | 'trigram' | 'contacts' | 'given' | 'probe';

/** What the list found so far: whether the trigram plan found walking too costly, how many contacts match. */
export type ListFacts = { trigramDeclined?: boolean; contacts?: number };

/** A search's contacts are taken as a list of ids (`given`) up to this many. */
export const FEW_CONTACTS = 100;

/**
 * A page is found by walking the activity index when that reads fewer entries than sorting the
 * matches: the walk reads about (offset + limit) × selected ÷ matches entries, sorting costs about
 * 14 entries' worth per match (bench/README.md, "Indexes and query plans").
 */
export const WALK_WHEN_ENTRIES_PER_MATCH_SQUARED = 14;

/** Walking to `page` is cheaper than sorting the `total` matches among `selected` conversations. */
export const walkIsCheaper = (page: Page, selected: number, total: number): boolean =>
  (page.offset + page.limit) * selected <= WALK_WHEN_ENTRIES_PER_MATCH_SQUARED * total * total;

/** A search that `conversation_name_trigrams` totals: three characters of a name, no digits, no filter. */
export const isTrigramSearch = (filter: ConversationFilter): filter is ConversationFilter & { search: string } =>
  Boolean(filter.search && !filter.searchDigits && !isNarrowed(filter) && [...filter.search].length === 3);

/** Which plan answers `filter` given what was found so far (pure: no database). */
export function planList(filter: ConversationFilter, facts: ListFacts = {}): ListPlan {
  if (filter.contactId !== undefined) return 'contact';
  if (!filter.search) return 'counters';
  if (isTrigramSearch(filter) && !facts.trigramDeclined) return 'trigram';
  if (facts.contacts === undefined) return 'contacts';
  return facts.contacts <= FEW_CONTACTS ? 'given' : 'probe';
}
