import type { Selectable } from 'kysely';
import type { ConversationTable } from '../../db/schema.js';

/** A conversation as the API writes and reads it (without the search copy of its contact's name, migration 0008). */
export type ConversationRow = Omit<Selectable<ConversationTable>, 'contact_name_search'>;

/** A conversation with the summary of its contact. */
export type ConversationWithContact = ConversationRow & { contact_name: string | null; contact_phone: string | null };

export type Page = { limit: number; offset: number };

/** A page of a list and the exact number of conversations its filter selects. */
export type ListResult = { rows: ConversationWithContact[]; total: number };
