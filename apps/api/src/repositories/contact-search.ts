import { type Expression, type Kysely, type SqlBool, sql } from 'kysely';
import { isPostgres, planAlike } from '../db/dialect.js';
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
export function contactContains(db: Kysely<any>, searches: { columns: SearchColumn[]; fragment: string }[]): Expression<SqlBool> {
  return contactMatches(db, searches.map(({ columns, fragment }) => searchTerm(db, columns, fragment)));
}

/**
 * A search as its statement binds it: the columns, whether the fragment is long enough for the
 * trigram indexes (which decides the SQL), and the one value the SQL takes for it (`operand`):
 * the escaped `LIKE` pattern, or on SQLite, for an indexed fragment, the fragment itself (the
 * statement makes its FTS5 query and its range of phone suffixes from it: sqliteIndexedMatch).
 */
export interface SearchTerm {
  columns: SearchColumn[];
  indexed: boolean;
  operand: string;
}

export const searchTerm = (db: Kysely<any>, columns: SearchColumn[], fragment: string): SearchTerm => {
  const indexed = indexable(fragment);
  return { columns, indexed, operand: isPostgres(db) || !indexed ? likeContains(fragment) : fragment };
};

/** contactContains for terms made before (searchTerm): their operands are used as values only, so a statement built from them can be compiled once (preparedByShape). */
export function contactMatches(db: Kysely<any>, terms: SearchTerm[]): Expression<SqlBool> {
  const conditions: Expression<SqlBool>[] = [];
  for (const { columns, indexed, operand } of terms) {
    if (isPostgres(db) || !indexed) conditions.push(...columns.map((column) => likePattern(db, `contacts.${column}`, operand, indexed)));
    else conditions.push(sqliteIndexedMatch(columns, operand));
  }
  return conditions.length === 1 ? (conditions[0] as Expression<SqlBool>) : sql<SqlBool>`(${sql.join(conditions, sql` or `)})`;
}

/**
 * SQLite, a fragment of three characters or more: the contacts whose rowid the FTS5 trigram table
 * finds for the name and e-mail, and the phone-suffix table (migration 0009) for the digits: a
 * phone contains the fragment when one of its suffixes starts with it, the range from `fragment`
 * to `fragment:` (`:` sorts right after `9`). One `rowid in (…)` of both, so the contacts are
 * looked up by rowid once whichever finds them.
 */
function sqliteIndexedMatch(columns: SearchColumn[], fragment: string): Expression<SqlBool> {
  const texts = columns.filter((column) => column !== 'phone_digits');
  const finders: Expression<unknown>[] = [];
  if (texts.length > 0) {
    // An FTS5 phrase of the literal fragment in those columns: `{a b} : "frag"`, quotes doubled.
    const query = sql`${sql.lit(`{${texts.join(' ')}} : "`)} || replace(${fragment}, '"', '""') || '"'`;
    finders.push(sql`select rowid from contacts_search where contacts_search match ${query}`);
  }
  if (texts.length < columns.length) finders.push(sql`select contact_rowid from contact_phone_suffixes where suffix >= ${fragment} and suffix < ${fragment} || ':'`);
  return sql<SqlBool>`contacts.rowid in (${sql.join(finders, sql` union all `)})`;
}

const indexable = (fragment: string) => [...fragment].length >= MIN_INDEXED_LENGTH;

/**
 * `column LIKE pattern`, the pattern an escaped `%fragment%` (likeContains: the fragment's `%`,
 * `_` and `\` escaped; backslash is Postgres' default LIKE escape; SQLite has none and is told).
 * On Postgres the pattern of a fragment long enough for the trigram indexes (`alike`) is bound out
 * of the planner's sight (planAlike): every such fragment gets the same plan. A shorter one is
 * not, and its statement is planned for its value (searchPlannedPerValue): a trigram index cannot
 * narrow it, and a plan that scans the index whole anyway was 2-3 times slower than reading the
 * table (`a`: 29 ms against 11 ms at 50,000 contacts).
 */
export function likePattern(db: Kysely<any>, column: string, pattern: string, alike: boolean): Expression<SqlBool> {
  if (!isPostgres(db)) return sql<SqlBool>`${sql.ref(column)} like ${pattern} escape '\\'`;
  return sql<SqlBool>`${sql.ref(column)} like ${alike ? planAlike(db, pattern, 'text') : pattern}`;
}

/**
 * `column` contains `fragment` as it is (no pattern, so nothing to escape), for a condition no
 * index answers and that is checked entry by entry (a three-character search's walk along the
 * activity index): Postgres `strpos(column, (select $n)) > 0`, SQLite `instr(column, ?) > 0`.
 * On Postgres `strpos` took 0.38 µs an entry where `LIKE '%…%'` took 0.7 (the walk reads about
 * fifty entries per match); on SQLite the two cost about the same. A condition a trigram index
 * should answer stays `LIKE` (likePattern): those indexes serve `LIKE`, not `strpos`.
 */
export function containsText(db: Kysely<any>, column: string, fragment: string): Expression<SqlBool> {
  return isPostgres(db) ? sql<SqlBool>`strpos(${sql.ref(column)}, ${planAlike(db, fragment, 'text')}) > 0` : sql<SqlBool>`instr(${sql.ref(column)}, ${fragment}) > 0`;
}

/**
 * Whether a statement holding these searches must be planned for its values on Postgres (run
 * unnamed, not as a named statement whose plan is kept): when a fragment is too short for the
 * trigram indexes (likePattern).
 */
export const searchPlannedPerValue = (db: Kysely<any>, searches: ({ fragment: string } | { indexed: boolean })[]): boolean =>
  isPostgres(db) && !searches.every(isIndexed);

/**
 * Whether `contactContains` finds these searches' contacts from SQLite's FTS table alone (every
 * fragment long enough): a query that then starts from `TenantScope.selectFromFound` looks up
 * just the matching rows.
 */
export const foundBySearchTable = (db: Kysely<any>, searches: ({ fragment: string } | { indexed: boolean })[]): boolean =>
  !isPostgres(db) && searches.every(isIndexed);

/** Whether a search (its fragment, or a term made of it: searchTerm) is long enough for the trigram indexes. */
const isIndexed = (search: { fragment: string } | { indexed: boolean }) => ('indexed' in search ? search.indexed : indexable(search.fragment));
