import { type Expression, type Kysely, type SqlBool, sql } from 'kysely';
import { isPostgres } from '../db/dialect.js';
import { likeContains } from './tenant.js';

/** Columns of `contacts` a search may look at. */
export type SearchColumn = 'name_search' | 'email_search' | 'phone_digits';

/** The trigram indexes only help from three characters on; shorter fragments scan. */
const MIN_INDEXED_LENGTH = 3;

/**
 * "The contact's `columns` contain `fragment` (case already folded)": one condition the contact
 * and conversation lists share. Postgres answers `LIKE '%…%'` from its trigram indexes; SQLite
 * asks its FTS5 trigram table (see migration 0004), except for fragments too short to index.
 */
export function contactContains(db: Kysely<any>, searches: { columns: SearchColumn[]; fragment: string }[]): Expression<SqlBool> {
  const likes = (columns: SearchColumn[], fragment: string) =>
    columns.map((column) => sql<SqlBool>`${sql.ref(`contacts.${column}`)} like ${likeContains(fragment)} escape '\\'`);
  const conditions: Expression<SqlBool>[] = [];
  for (const { columns, fragment } of searches) {
    if (isPostgres(db) || [...fragment].length < MIN_INDEXED_LENGTH) conditions.push(...likes(columns, fragment));
    else conditions.push(sql<SqlBool>`contacts.rowid in (select rowid from contacts_search where contacts_search match ${ftsQuery(columns, fragment)})`);
  }
  return conditions.length === 1 ? (conditions[0] as Expression<SqlBool>) : sql<SqlBool>`(${sql.join(conditions, sql` or `)})`;
}

/**
 * Whether `contactContains` finds these searches' contacts from SQLite's FTS table alone (every
 * fragment long enough): a query that then starts from `TenantScope.selectFromFound` looks up
 * just the matching rows.
 */
export const foundBySearchTable = (db: Kysely<any>, searches: { fragment: string }[]): boolean =>
  !isPostgres(db) && searches.every(({ fragment }) => [...fragment].length >= MIN_INDEXED_LENGTH);

/** An FTS5 query for a literal substring in some columns: `{a b} : "frag"` with quotes doubled. */
const ftsQuery = (columns: SearchColumn[], fragment: string) => `{${columns.join(' ')}} : "${fragment.replace(/"/g, '""')}"`;
