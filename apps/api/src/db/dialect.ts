import { type Expression, type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import { PLAN_PER_VALUE } from './postgres-prepared-statements.js';

/**
 * What the repositories may ask of the database they run on, as capabilities and the few SQL
 * pieces that are spelled differently: the one place that knows SQLite and Postgres apart
 * (Kysely's own model: an adapter says what it supports). It travels on the database handle
 * (DatabaseHandle.capabilities) and the tenant scope (TenantScope.dialect).
 */
export interface Dialect {
  /**
   * Rows can be locked for update, and locked rows skipped (Postgres). SQLite needs neither: its
   * write transactions run one at a time.
   */
  readonly rowLocks: boolean;
  /** A CTE may insert, update or delete (Postgres): a write and the write that depends on it in one statement. */
  readonly dataModifyingCtes: boolean;
  /** LATERAL joins (Postgres): a page's ids and its rows found by one statement. */
  readonly lateralJoins: boolean;
  /** Statements of one request can run at once (Postgres' pool); SQLite's one connection runs them in turn. */
  readonly concurrentStatements: boolean;
  /**
   * Contacts are searched through the FTS5 trigram table and the phone-suffix table (SQLite,
   * migrations 0004 and 0009), not by `LIKE` over trigram indexes (Postgres, pg_trgm).
   */
  readonly contactSearchTable: boolean;
  /**
   * The planner must be steered by the query's shape (SQLite: `+column` keeps an index from being
   * used, `INDEXED BY` names one), where Postgres plans from its statistics alone.
   */
  readonly steeredPlans: boolean;
  /**
   * A transaction can notify other connections when it commits (Postgres' NOTIFY, which event
   * streams LISTEN for); SQLite's streams watch for commits instead (db/event-notifications.ts).
   */
  readonly notifiesCommits: boolean;
  /**
   * The driver gets binary values as text and decodes them (node-postgres: a bytea in hex, a string twice its
   * size); SQLite's driver hands over the bytes.
   */
  readonly bytesAsText: boolean;
  /** Ids aggregated into one value: an array (Postgres) or the JSON text of one (SQLite). */
  listOf(column: string): RawBuilder<string[] | string | null>;
  /** The `id` column of a one-column query's rows, aggregated into one value as listOf does. */
  listFrom(query: Expression<unknown>): RawBuilder<string[] | string | null>;
  /** The ids of a list (listOf, boundList) as a table of one column, `id`. */
  idsIn(list: Expression<unknown> | string[] | string): RawBuilder<{ id: string }>;
  /** `column` is one of the ids of a list expression (listOf, listFrom). */
  isInList(column: string, list: Expression<unknown>): Expression<SqlBool>;
  /**
   * `table` read through `index` only, where plans are steered (steeredPlans: `INDEXED BY`); the
   * table itself where the planner chooses from its statistics.
   */
  indexedBy(table: string, index: string): RawBuilder<unknown>;
  /** `column` in a form no index answers, where plans are steered (`+column`): the matches are sorted, not walked. */
  unindexed(column: string): RawBuilder<unknown>;
  /**
   * Where contacts are searched through search tables (contactSearchTable): the contacts' rowids
   * whose `texts` columns (FTS5 trigram table, migration 0004) or phone digits (`digits`: the
   * phone-suffix table, migration 0009) contain `fragment`. Undefined elsewhere.
   */
  searchTableRowids?(texts: string[], digits: boolean, fragment: Expression<string> | string): RawBuilder<unknown>;
  /** A list of ids as one bound value, whatever its length (one statement text for every length). */
  boundList(values: readonly string[]): string[] | string;
  /** `column` is one of the ids of a bound list (boundList). */
  isOneOf(column: string, list: string[] | string): Expression<SqlBool>;
  /**
   * A value whose plan does not depend on it, bound so that Postgres does not plan the statement
   * for it (an uncorrelated subquery it evaluates once at run time and still drives an index
   * with); on SQLite, which plans each statement once, the plain parameter.
   */
  // biome-ignore lint/suspicious/noExplicitAny: the value keeps whatever type its column compares with.
  planAlike(value: unknown, type: 'text' | 'bigint' | 'text[]'): Expression<any>;
  /** An integer value as the database compares it with a bigint. */
  integer(value: number | Expression<number>): RawBuilder<number>;
  /** `column LIKE pattern`, the pattern an escaped `%fragment%`; `alike` when a trigram index may answer it. */
  like(column: string, pattern: string, alike: boolean): Expression<SqlBool>;
  /** `column` contains `fragment` as it is: for a condition checked entry by entry, which no index answers. */
  contains(column: string, fragment: string): Expression<SqlBool>;
  /** `column in (matches)` checked against the matches, hashed once, on each entry of an index walk. */
  checkedAgainst(column: string, matches: Expression<unknown>): Expression<SqlBool>;
  /** The number a bound JSON object (`{"key": 3}`) holds under the value of `column`; null when it has none. */
  numberIn(object: string, column: string): RawBuilder<number | null>;
  /**
   * A bound JSON array of objects as a table of these columns (a subquery, aliased by the caller):
   * the rows of a set-based update, one statement for all of them whatever their number. The update
   * names the target rows' keys too (isOneOf): Postgres counts a recordset as 100 rows whatever it
   * holds, and on statistics older than the table joined it by reading all of the account's rows.
   */
  rowsOf<R>(rows: readonly R[], columns: { [K in keyof R]: 'text' | 'integer' }): RawBuilder<R>;
  /**
   * The error is one the whole transaction may not meet if run again: a deadlock, a serialization
   * failure, a unique key or a reference that a concurrent transaction committed after this one's
   * read (Postgres; the run again reads it and answers as it would have); a busy database (SQLite,
   * another process writing; its own transactions run one at a time, so its checks see everything).
   */
  transientFailure(error: unknown): boolean;
  /**
   * The foreign key whose referenced row an insert or update did not find, and the missing key's
   * id (Postgres names both). SQLite names neither; its write transactions run one at a time, so
   * a row read by one cannot vanish before its write.
   */
  missingReference(error: unknown): { constraint: string; id: string | undefined } | undefined;
}

/** What a driver's error says of itself (pg's DatabaseError, better-sqlite3's SqliteError). */
type DriverError = { code?: unknown; constraint?: unknown; detail?: unknown } | null | undefined;
const codeOf = (error: unknown): string | undefined => {
  const code = (error as DriverError)?.code;
  return typeof code === 'string' ? code : undefined;
};
const detailOf = (error: unknown): string => {
  const detail = (error as DriverError)?.detail;
  return typeof detail === 'string' ? detail : '';
};

const postgres: Dialect = {
  rowLocks: true,
  dataModifyingCtes: true,
  lateralJoins: true,
  concurrentStatements: true,
  contactSearchTable: false,
  steeredPlans: false,
  notifiesCommits: true,
  bytesAsText: true,
  listOf: (column) => sql`array_agg(${sql.ref(column)})`,
  listFrom: (query) => sql`array(${query})`,
  idsIn: (list) => sql`(select unnest(${list}::text[]) as id)`,
  isInList: (column, list) => sql<SqlBool>`${sql.ref(column)} = any(${list})`,
  indexedBy: (table) => sql.table(table),
  unindexed: (column) => sql.ref(column),
  boundList: (values) => [...values],
  isOneOf: (column, list) => sql<SqlBool>`${sql.ref(column)} = any(${postgres.planAlike(list, 'text[]')}::text[])`,
  planAlike: (value, type) => sql`(select ${value}::${sql.raw(type)})`,
  integer: (value) => sql<number>`${value}::bigint`,
  like: (column, pattern, alike) =>
    alike
      ? sql<SqlBool>`${sql.ref(column)} like ${postgres.planAlike(pattern, 'text')}`
      : sql<SqlBool>`${sql.ref(column)} like ${pattern} ${sql.raw(PLAN_PER_VALUE)}`,
  contains: (column, fragment) => sql<SqlBool>`strpos(${sql.ref(column)}, ${postgres.planAlike(fragment, 'text')}) > 0`,
  // `or false` keeps the planner from turning the subquery into a join: it is folded away only
  // after that choice, so each index entry is checked against a hashed subplan.
  checkedAgainst: (column, matches) => sql<SqlBool>`(${sql.ref(column)} in (${matches}) or false)`,
  numberIn: (object, column) => sql<number | null>`(${object}::jsonb ->> ${sql.ref(column)})::int`,
  rowsOf: (rows, columns) => {
    const definitions = Object.entries(columns).map(([name, type]) => sql`${sql.id(name)} ${sql.raw(type as string)}`);
    return sql`(select * from json_to_recordset(${JSON.stringify(rows)}::json) as r(${sql.join(definitions)}))`;
  },
  // 40P01 deadlock_detected, 40001 serialization_failure. 23505 is a unique key a concurrent
  // transaction committed after this one checked it was free: run again, the check answers (400).
  // 23503 on a delete is a row referencing the deleted one that a concurrent insert committed
  // after the delete's statements had read.
  transientFailure: (error) => {
    const code = codeOf(error);
    return (
      code === '40P01' ||
      code === '40001' ||
      code === '23505' ||
      (code === '23503' && detailOf(error).includes('is still referenced'))
    );
  },
  missingReference: (error) => {
    const constraint = (error as DriverError)?.constraint;
    if (codeOf(error) !== '23503' || typeof constraint !== 'string') return undefined;
    // `Key (account_id, contact_id)=(acct_…, ct_…) is not present in table "contacts".`: the id is the key's last
    // value.
    const key = /\)=\((.*)\) is not present in table/.exec(detailOf(error))?.[1];
    if (key === undefined) return undefined;
    return { constraint, id: key.split(', ').at(-1) };
  },
};

const sqlite: Dialect = {
  rowLocks: false,
  dataModifyingCtes: false,
  lateralJoins: false,
  concurrentStatements: false,
  contactSearchTable: true,
  steeredPlans: true,
  notifiesCommits: false,
  bytesAsText: false,
  listOf: (column) => sql`json_group_array(${sql.ref(column)})`,
  listFrom: (query) => sql`(select json_group_array(l.id) from (${query}) l)`,
  idsIn: (list) => sql`(select value as id from json_each(${list}))`,
  isInList: (column, list) => sql<SqlBool>`${sql.ref(column)} in (select value from json_each(${list}))`,
  indexedBy: (table, index) => sql`${sql.table(table)} indexed by ${sql.id(index)}`,
  // `+column` is no index's: SQLite sorts the rows it found rather than walk an index in its order.
  unindexed: (column) => sql`+${sql.ref(column)}`,
  // An FTS5 phrase of the literal fragment in the text columns (`{a b} : "frag"`, quotes doubled);
  // a phone contains the digits when one of its suffixes starts with them (`:` sorts after `9`).
  searchTableRowids: (texts, digits, fragment) => {
    const finders: RawBuilder<unknown>[] = [];
    if (texts.length > 0) {
      const query = sql`${sql.lit(`{${texts.join(' ')}} : "`)} || replace(${fragment}, '"', '""') || '"'`;
      finders.push(sql`select rowid from contacts_search where contacts_search match ${query}`);
    }
    if (digits)
      finders.push(
        sql`select contact_rowid from contact_phone_suffixes where suffix >= ${fragment} and suffix < ${fragment} || ':'`,
      );
    return sql`${sql.join(finders, sql` union all `)}`;
  },
  boundList: (values) => JSON.stringify(values),
  isOneOf: (column, list) => sqlite.isInList(column, sql`${list}`),
  planAlike: (value) => sql`${value}`,
  integer: (value) => sql<number>`${value}`,
  like: (column, pattern) => sql<SqlBool>`${sql.ref(column)} like ${pattern} escape '\\'`,
  contains: (column, fragment) => sql<SqlBool>`instr(${sql.ref(column)}, ${fragment}) > 0`,
  // `+column` is no index's: SQLite checks each entry against the matches instead of starting from them.
  checkedAgainst: (column, matches) => sql<SqlBool>`+${sql.ref(column)} in (${matches})`,
  numberIn: (object, column) => sql<number | null>`json_extract(${object}, '$."' || ${sql.ref(column)} || '"')`,
  rowsOf: (rows, columns) => {
    const fields = Object.keys(columns).map((name) => sql`json_extract(value, ${`$."${name}"`}) as ${sql.id(name)}`);
    return sql`(select ${sql.join(fields)} from json_each(${JSON.stringify(rows)}))`;
  },
  // SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT: a read transaction that could not
  // become a write one), which the busy timeout does not wait out.
  transientFailure: (error) => codeOf(error)?.startsWith('SQLITE_BUSY') ?? false,
  missingReference: () => undefined,
};

/** The dialect of each database: DatabaseHandle.capabilities is one of them. */
export const dialects: { readonly sqlite: Dialect; readonly postgres: Dialect } = { sqlite, postgres };

/** Kysely over any schema: the type of code that serves every schema (the dialect's helpers, migrations). */
// biome-ignore lint/suspicious/noExplicitAny: Kysely<any> is Kysely's own type for schema-agnostic code, as its migration guide has it.
export type AnyKysely = Kysely<any>;

/**
 * For migrations, whose DDL differs by database; the rest of the code asks the handle's Dialect.
 * Kysely's Migrator hands a migration only a Kysely instance (or its transaction), so the answer
 * comes from public API: Postgres numbers its parameters (`$1`), SQLite does not (`?`).
 */
export const isPostgres = (db: AnyKysely): boolean => sql`${0}`.compile(db).sql === '$1';

/**
 * `SELECT … FOR UPDATE` where rows can be locked (rowLocks), optionally skipping locked rows; the
 * query as it is elsewhere. `keysKept` (`FOR NO KEY UPDATE`) is for a holder that changes no key:
 * inserts of rows that reference the locked one (their foreign-key checks) go on meanwhile.
 */
export function lockedForUpdate<Q extends { forUpdate(): Q; forNoKeyUpdate(): Q; skipLocked(): Q }>(
  dialect: Dialect,
  query: Q,
  options: { skipLocked?: boolean; keysKept?: boolean } = {},
): Q {
  if (!dialect.rowLocks) return query;
  const locked = options.keysKept ? query.forNoKeyUpdate() : query.forUpdate();
  return options.skipLocked ? locked.skipLocked() : locked;
}

/**
 * `SELECT … FOR KEY SHARE` where rows can be locked: the rows found cannot be deleted until the
 * transaction ends, and a row whose delete is under way is waited for and then not found, so a
 * write that references what it read never meets a foreign-key violation. The lock a foreign-key
 * check takes anyway, taken at the read.
 */
export function lockedAgainstDelete<Q extends { forKeyShare(): Q }>(dialect: Dialect, query: Q): Q {
  return dialect.rowLocks ? query.forKeyShare() : query;
}

/**
 * Takes a lock named `name` until the transaction ends (Postgres' transaction-level advisory
 * lock), so that the holders of one name take turns without locking any row; SQLite's write
 * transactions already take turns. Call it inside a transaction.
 */
export async function lockNameForTransaction(
  { db, dialect }: { db: AnyKysely; dialect: Dialect },
  name: string,
): Promise<void> {
  if (!dialect.rowLocks) return;
  await sql`select pg_advisory_xact_lock(hashtextextended(${name}, 0))`.execute(db);
}
