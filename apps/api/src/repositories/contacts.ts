import { type Selectable, type Updateable, sql } from 'kysely';
import { lockedForUpdate } from '../db/dialect.js';
import type { ContactTable } from '../db/schema.js';
import { type SearchColumn, contactContains, foundBySearchTable } from './contact-search.js';
import type { TenantScope } from './tenant.js';

export type ContactRow = Selectable<ContactTable>;

export interface ContactFilter {
  /** Lower-cased search text. */
  search?: string | undefined;
  /** Digits of the search, when it holds any. */
  searchDigits?: string | undefined;
  tag?: string | undefined;
}

/** What a contact search looks for: the name or e-mail, and the phone's digits when it has any. */
const contactSearches = (search: string, digits: string | undefined) => [
  { columns: ['name_search', 'email_search'] as SearchColumn[], fragment: search },
  ...(digits ? [{ columns: ['phone_digits'] as SearchColumn[], fragment: digits }] : []),
];

/**
 * The contacts a filter selects. `use: 'count'` starts a search from the rows the FTS table
 * finds (`TenantScope.selectFromFound`); a page keeps the plain account condition, so SQLite may
 * walk the creation order and stop at a full page when the search matches many.
 */
const filtered = (scope: TenantScope, filter: ContactFilter, use: 'page' | 'count' = 'page') => {
  const searches = filter.search ? contactSearches(filter.search, filter.searchDigits) : [];
  let query = use === 'count' && searches.length > 0 && foundBySearchTable(scope.db as never, searches) ? scope.selectFromFound('contacts') : scope.selectFrom('contacts');
  if (searches.length > 0) query = query.where(() => contactContains(scope.db as never, searches));
  if (filter.tag !== undefined) {
    const tag = filter.tag;
    query = query.where((eb) =>
      eb.exists(
        scope
          .selectFrom('contact_tags')
          .select(sql.lit(1).as('one'))
          .where('contact_tags.contact_id', '=', eb.ref('contacts.id'))
          .where('contact_tags.tag', '=', tag),
      ),
    );
  }
  return query;
};

export const contactsRepository = {
  findById: (scope: TenantScope, id: string) => scope.selectFrom('contacts').selectAll().where('contacts.id', '=', id).executeTakeFirst(),

  /**
   * The contact, its row locked until the transaction ends, for read-modify-write changes
   * (tags): concurrent writers then queue instead of losing each other's changes.
   */
  findByIdForUpdate: (scope: TenantScope, id: string) =>
    lockedForUpdate(scope.db as never, scope.selectFrom('contacts').selectAll().where('contacts.id', '=', id)).executeTakeFirst(),

  findByPhone: (scope: TenantScope, phone: string) => scope.selectFrom('contacts').selectAll().where('contacts.phone', '=', phone).executeTakeFirst(),

  async list(scope: TenantScope, filter: ContactFilter, page: { limit: number; offset: number }) {
    const [rows, count] = await Promise.all([
      filtered(scope, filter)
        .selectAll()
        .orderBy('contacts.created_at', 'desc')
        .orderBy('contacts.id', 'desc')
        .limit(page.limit)
        .offset(page.offset)
        .execute(),
      // A tag alone is counted from the tag index: a contact has a tag at most once, and
      // deleting a contact deletes its rows there.
      filter.tag !== undefined && !filter.search
        ? scope
            .selectFrom('contact_tags')
            .where('contact_tags.tag', '=', filter.tag)
            .select((eb) => eb.fn.countAll<number>().as('total'))
            .executeTakeFirstOrThrow()
        : filtered(scope, filter, 'count')
            .select((eb) => eb.fn.countAll<number>().as('total'))
            .executeTakeFirstOrThrow(),
    ]);
    return { rows, total: Number(count.total) };
  },

  insert: (scope: TenantScope, row: Omit<ContactRow, 'account_id' | 'conversation_count'>) => scope.insert('contacts', row),

  update: (scope: TenantScope, id: string, patch: Updateable<ContactTable>) =>
    scope.updateTable('contacts').set(patch).where('contacts.id', '=', id).execute(),

  delete: (scope: TenantScope, id: string) => scope.deleteFrom('contacts').where('contacts.id', '=', id).executeTakeFirst(),

  addToTagIndex: (scope: TenantScope, contactId: string, tag: string, at: string) =>
    scope.insert('contact_tags', { contact_id: contactId, tag, created_at: at }),

  removeFromTagIndex: (scope: TenantScope, contactId: string, tag: string) =>
    scope.deleteFrom('contact_tags').where('contact_tags.contact_id', '=', contactId).where('contact_tags.tag', '=', tag).execute(),

  /** Makes the contact_tags index match the contact's tags. */
  async replaceTagIndex(scope: TenantScope, contactId: string, tags: readonly string[], at: string) {
    await scope.deleteFrom('contact_tags').where('contact_tags.contact_id', '=', contactId).execute();
    await scope.insert(
      'contact_tags',
      tags.map((tag) => ({ contact_id: contactId, tag, created_at: at })),
    );
  },
};
