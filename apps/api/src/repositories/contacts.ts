import { type ExpressionBuilder, type Selectable, type Updateable, sql } from 'kysely';
import { type Dialect, lockedAgainstDelete, lockedForUpdate } from '../db/dialect.js';
import type { ContactTable, Database } from '../db/schema.js';
import { type SearchColumn, contactContains, foundBySearchTable } from './contact-search.js';
import { preparedByShape } from './prepared.js';
import { type Executor, TenantScope } from './tenant.js';

export type ContactRow = Selectable<ContactTable>;

export interface ContactFilter {
  /** Lower-cased search text. */
  search?: string | undefined;
  /** Digits of the search, when it holds any. */
  searchDigits?: string | undefined;
  tag?: string | undefined;
}

/** What a contact search looks for: the name or e-mail, and the phone's digits when it has any. */
const contactSearches = (search: string, digits: string | undefined) =>
  // A search of digits alone: one search of all three columns (one FTS match on SQLite).
  digits === search
    ? [{ columns: ['name_search', 'email_search', 'phone_digits'] as SearchColumn[], fragment: search }]
    : [
        { columns: ['name_search', 'email_search'] as SearchColumn[], fragment: search },
        ...(digits ? [{ columns: ['phone_digits'] as SearchColumn[], fragment: digits }] : []),
      ];

/**
 * The contacts a filter selects. `from: 'matches'` starts a search from the rows the FTS table
 * finds (`TenantScope.selectFromFound`: a count, a page of few matches); `'account'` keeps the
 * plain account condition, so SQLite may walk the creation order and stop at a full page.
 */
/** Up to this many matches a contact search's page sorts them rather than walking the creation order. */
const SORT_CONTACT_MATCHES_UP_TO = 500;

const filtered = (scope: TenantScope, filter: ContactFilter, from: 'account' | 'matches' = 'account') => {
  const searches = filter.search ? contactSearches(filter.search, filter.searchDigits) : [];
  let query =
    from === 'matches' && searches.length > 0 && foundBySearchTable(scope.dialect, searches)
      ? scope.selectFromFound('contacts')
      : scope.selectFrom('contacts');
  if (searches.length > 0) query = query.where(() => contactContains(scope.dialect, searches));
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

/**
 * A list without a search: which filters it has (a tag or none) and its page's size, and the
 * values it binds. The size is a literal of the SQL (at most a hundred texts per shape): SQLite
 * prepares a statement with a bound LIMIT again at each execution, and a Postgres plan made for
 * any LIMIT walks no index.
 */
type UnsearchedShape = { tag: boolean; limit: number };
type UnsearchedValues = { accountId: string; tag: string | undefined };
type PageValues = UnsearchedValues & { offset: number };

/** The contacts of a list without a search, newest first along the creation order. */
const newestFirst = (db: Executor, dialect: Dialect, shape: UnsearchedShape, values: UnsearchedValues) =>
  filtered(new TenantScope(db, values.accountId, dialect), { tag: shape.tag ? values.tag : undefined })
    .orderBy('contacts.created_at', 'desc')
    .orderBy('contacts.id', 'desc')
    .limit(sql.lit(shape.limit));

/**
 * The page of a list without a search, compiled once per shape (preparedByShape): Kysely built it
 * at every request.
 */
const unsearchedPage = preparedByShape((db: Executor, dialect: Dialect, shape: UnsearchedShape, values: PageValues) =>
  newestFirst(db, dialect, shape, values).selectAll().offset(values.offset),
);

const rowsOf = (scope: TenantScope) => scope.selectFrom('contacts').selectAll('contacts');

/**
 * Postgres, a tag: the tag's counter and its page in one statement. The page's ids come from the
 * creation-order index alone (each entry's tag probed by primary key), then its rows by primary
 * key; past the counted total nothing is walked.
 */
const taggedPageWithTotal = preparedByShape(
  (db: Executor, dialect: Dialect, shape: UnsearchedShape, values: PageValues) => {
    const scope = new TenantScope(db, values.accountId, dialect);
    const counters = scope.selectFrom('contact_tag_counts').select('contact_tag_counts.contacts');
    const counted = counters.where('contact_tag_counts.tag', '=', values.tag as string);
    const ids = newestFirst(db, dialect, shape, values).select('contacts.id').offset(values.offset);
    return db
      .selectFrom(sql<{ total: number }>`(select coalesce((${counted}), 0) as total)`.as('t'))
      .leftJoinLateral(
        () => rowsOf(scope).where('contacts.id', '=', sql<string>`any(array(${ids}))`).as('r'),
        (join) => join.on(sql<boolean>`t.total > ${values.offset}`),
      )
      .selectAll('r')
      .select('t.total')
      .orderBy('r.created_at', 'desc')
      .orderBy('r.id', 'desc');
  },
);

/**
 * The exact number of contacts of a list without a search, compiled once per shape. A tag's is
 * its counter (migration 0018: kept by triggers on contact_tags, so exact under every writer); no
 * row means no contact ever had the tag.
 */
const unsearchedCount = preparedByShape(
  (db: Executor, dialect: Dialect, shape: { tag: boolean }, values: UnsearchedValues) => {
    const scope = new TenantScope(db, values.accountId, dialect);
    return shape.tag
      ? scope
          .selectFrom('contact_tag_counts')
          .where('contact_tag_counts.tag', '=', values.tag as string)
          .select('contact_tag_counts.contacts as total')
      : scope.selectFrom('contacts').select((eb) => eb.fn.countAll<number>().as('total'));
  },
);

export const contactsRepository = {
  findById: (scope: TenantScope, id: string) =>
    scope.selectFrom('contacts').selectAll().where('contacts.id', '=', id).executeTakeFirst(),

  /**
   * The contact, its row locked until the transaction ends, for read-modify-write changes
   * (tags): concurrent writers then queue instead of losing each other's changes. Rows that
   * reference it may still be inserted meanwhile (their foreign-key checks are not blocked): a
   * writer holding it while it waits for one of them would otherwise deadlock.
   */
  findByIdForUpdate: (scope: TenantScope, id: string) =>
    lockedForUpdate(scope.dialect, scope.selectFrom('contacts').selectAll().where('contacts.id', '=', id), {
      keysKept: true,
    }).executeTakeFirst(),

  /** The contact, locked against every other writer and every insert that references it, to delete it. */
  findByIdForDelete: (scope: TenantScope, id: string) =>
    lockedForUpdate(
      scope.dialect,
      scope.selectFrom('contacts').selectAll().where('contacts.id', '=', id),
    ).executeTakeFirst(),

  /**
   * The contact, held against a concurrent delete until the transaction ends, for a write that
   * references it (an order, a conversation): a delete under way is waited for, and the contact
   * is then not found (404) instead of failing the write's foreign key.
   */
  findByIdForReference: (scope: TenantScope, id: string) =>
    lockedAgainstDelete(
      scope.dialect,
      scope.selectFrom('contacts').selectAll().where('contacts.id', '=', id),
    ).executeTakeFirst(),

  findByPhone: (scope: TenantScope, phone: string) =>
    scope.selectFrom('contacts').selectAll().where('contacts.phone', '=', phone).executeTakeFirst(),

  async list(scope: TenantScope, filter: ContactFilter, page: { limit: number; offset: number }) {
    if (!filter.search) {
      const shape = { tag: filter.tag !== undefined, limit: page.limit };
      const values = { accountId: scope.accountId, tag: filter.tag };
      if (shape.tag && scope.dialect.lateralJoins) {
        const found = await taggedPageWithTotal(scope, shape, { ...values, offset: page.offset });
        // Past the end the one row is the total's, without a contact.
        const rows = found.filter((row) => row.id !== null) as ContactRow[];
        return { rows, total: Number(found[0]?.total ?? 0) };
      }
      const [found, counted] = await Promise.all([
        unsearchedPage(scope, shape, { ...values, offset: page.offset }),
        unsearchedCount(scope, { tag: shape.tag }, values),
      ]);
      return { rows: found as ContactRow[], total: Number(counted[0]?.total ?? 0) };
    }
    const rows = (from: 'account' | 'matches') =>
      filtered(scope, filter, from)
        .selectAll()
        .orderBy('contacts.created_at', 'desc')
        .orderBy('contacts.id', 'desc')
        .limit(page.limit)
        .offset(page.offset)
        .execute();
    const count = () =>
      filtered(scope, filter, 'matches')
        .select((eb) => eb.fn.countAll<number>().as('total'))
        .executeTakeFirstOrThrow()
        .then((row) => Number(row.total));
    if (foundBySearchTable(scope.dialect, contactSearches(filter.search, filter.searchDigits))) {
      // SQLite, a search its FTS table answers: counted from the matches first; a few matches are
      // then sorted (a phone number's one contact, where walking the creation order would read
      // every contact of the account), many are found by walking the creation order.
      const total = await count();
      if (total <= page.offset) return { rows: [], total };
      return { rows: await rows(total <= SORT_CONTACT_MATCHES_UP_TO ? 'matches' : 'account'), total };
    }
    const [found, total] = await Promise.all([rows('account'), count()]);
    return { rows: found, total };
  },

  insert: (scope: TenantScope, row: Omit<ContactRow, 'account_id' | 'conversation_count'>) =>
    scope.insert('contacts', row),

  update: (scope: TenantScope, id: string, patch: Updateable<ContactTable>) =>
    scope.updateTable('contacts').set(patch).where('contacts.id', '=', id).execute(),

  delete: (scope: TenantScope, id: string) =>
    scope.deleteFrom('contacts').where('contacts.id', '=', id).executeTakeFirst(),

  addToTagIndex: (scope: TenantScope, contactId: string, tag: string, at: string) =>
    scope.insert('contact_tags', { contact_id: contactId, tag, created_at: at }),

  removeFromTagIndex: (scope: TenantScope, contactId: string, tag: string) =>
    scope
      .deleteFrom('contact_tags')
      .where('contact_tags.contact_id', '=', contactId)
      .where('contact_tags.tag', '=', tag)
      .execute(),

  /**
   * Makes the contact_tags index match the contact's tags, writing only the tags that changed: each
   * write moves the tag's counter (migration 0018), whose row stays locked until the transaction
   * ends. Where rows are locked (Postgres) the counters of the changed tags are locked first, all at
   * once in name order, so that two transactions changing the same tags queue instead of
   * deadlocking (one removing a tag the other adds, and the reverse, locked them crosswise).
   */
  async replaceTagIndex(scope: TenantScope, contactId: string, tags: readonly string[], at: string) {
    const indexed = scope.selectFrom('contact_tags').where('contact_tags.contact_id', '=', contactId);
    const had = (await indexed.select('contact_tags.tag').execute()).map((row) => row.tag);
    const removed = had.filter((tag) => !tags.includes(tag));
    const added = tags.filter((tag) => !had.includes(tag)).sort(byCodePoint);
    if (removed.length === 0 && added.length === 0) return;
    if (scope.dialect.rowLocks) await lockTagCounts(scope, [...removed, ...added]);
    if (removed.length > 0) {
      const gone = scope.deleteFrom('contact_tags').where('contact_tags.contact_id', '=', contactId);
      await gone.where('contact_tags.tag', 'in', removed).execute();
    }
    if (added.length > 0)
      await scope.insert(
        'contact_tags',
        added.map((tag) => ({ contact_id: contactId, tag, created_at: at })),
      );
  },
};

/** An upsert's update that leaves a counter as it is, and so only locks its row. */
const unchanged = {
  contacts: (eb: ExpressionBuilder<Database, 'contact_tag_counts'>) => eb.ref('contact_tag_counts.contacts'),
};

/** Locks the counters of these tags, in name order (a counter not there yet is made, at zero). */
async function lockTagCounts(scope: TenantScope, tags: string[]): Promise<void> {
  const rows = [...tags].sort(byCodePoint).map((tag) => ({ account_id: scope.accountId, tag, contacts: 0 }));
  await scope.db
    .insertInto('contact_tag_counts')
    .values(rows)
    .onConflict((conflict) => conflict.columns(['account_id', 'tag']).doUpdateSet(unchanged))
    .execute();
}

const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
