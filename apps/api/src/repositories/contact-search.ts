import { type Expression, type SqlBool, sql } from 'kysely';
import type { Dialect } from '../db/dialect.js';
import { likeContains } from './tenant.js';

/** Columns of `contacts` a search may look at. */
export type SearchColumn = 'name_search' | 'email_search' | 'phone_digits';

/** The trigram indexes only help from three characters on; shorter fragments scan. */
const MIN_INDEXED_LENGTH = 3;

/**
 * "The contact's `columns` contain `fragment` (case already folded)": one condition the contact
 * and conversation lists share. Postgres answers `LIKE '%…%'` from its trigram indexes; SQLite
 * asks its FTS5 trigram table (migration 0004) and its phone-suffix table (migration 0009),
 * except for fragments too short to index.
 */
export function contactContains(
  dialect: Dialect,
  searches: { columns: SearchColumn[]; fragment: string }[],
): Expression<SqlBool> {
  return contactMatches(
    dialect,
    searches.map(({ columns, fragment }) => bindSearch(dialect, columns, fragment)),
  );
}

/**
 * A search as its statement binds it: the columns, whether the fragment is long enough for the
 * trigram indexes (which decides the SQL), and the one value the SQL takes for it (`operand`):
 * the escaped `LIKE` pattern, or on SQLite, for an indexed fragment, the fragment itself (the
 * statement makes its FTS5 query and its range of phone suffixes from it: searchTableMatch).
 */
export interface SearchTerm {
  columns: SearchColumn[];
  indexed: boolean;
  operand: string;
}

export const bindSearch = (dialect: Dialect, columns: SearchColumn[], fragment: string): SearchTerm => {
  const indexed = indexable(fragment);
  return { columns, indexed, operand: indexed && dialect.contactSearchTable ? fragment : likeContains(fragment) };
};

/**
 * contactContains for terms made before (bindSearch): their operands are used as values only, so a statement built from
 * them can be compiled once (preparedByShape).
 */
export function contactMatches(dialect: Dialect, terms: SearchTerm[]): Expression<SqlBool> {
  const conditions: Expression<SqlBool>[] = [];
  for (const { columns, indexed, operand } of terms) {
    if (!indexed || !dialect.contactSearchTable)
      conditions.push(...columns.map((column) => dialect.like(`contacts.${column}`, operand, indexed)));
    else conditions.push(searchTableMatch(dialect, columns, operand));
  }
  return conditions.length === 1
    ? (conditions[0] as Expression<SqlBool>)
    : sql<SqlBool>`(${sql.join(conditions, sql` or `)})`;
}

/**
 * A fragment of three characters or more where contacts have search tables (contactSearchTable):
 * one `rowid in (…)` of what each table finds, so a contact is looked up once whichever finds it.
 */
function searchTableMatch(dialect: Dialect, columns: SearchColumn[], fragment: string): Expression<SqlBool> {
  const texts = columns.filter((column) => column !== 'phone_digits');
  const rowids = dialect.searchTableRowids?.(texts, texts.length < columns.length, fragment);
  return sql<SqlBool>`contacts.rowid in (${rowids})`;
}

const indexable = (fragment: string) => [...fragment].length >= MIN_INDEXED_LENGTH;

/**
 * Whether `contactContains` finds these searches' contacts from SQLite's FTS table alone (every
 * fragment long enough): a query that then starts from `TenantScope.selectFromFound` looks up
 * just the matching rows.
 */
export const foundBySearchTable = (
  dialect: Dialect,
  searches: ({ fragment: string } | { indexed: boolean })[],
): boolean => dialect.contactSearchTable && searches.every(isIndexed);

/** Whether a search (its fragment, or a term made of it: bindSearch) is long enough for the trigram indexes. */
const isIndexed = (search: { fragment: string } | { indexed: boolean }) =>
  'indexed' in search ? search.indexed : indexable(search.fragment);
