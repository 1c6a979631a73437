import { type Expression, type Kysely, PostgresAdapter, type SqlBool, sql } from 'kysely';

/**
 * For migrations, which receive a bare Kysely instance: the few places where the DDL must
 * differ (a collation) ask here rather than testing driver names themselves.
 */
export const isPostgres = (db: Kysely<any>): boolean => db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * `SELECT … FOR UPDATE` where the database has row locks (Postgres). SQLite has none and needs
 * none: its write transactions already run one at a time.
 */
export function lockedForUpdate<Q extends { forUpdate(): Q; skipLocked(): Q }>(db: Kysely<any>, query: Q, options: { skipLocked?: boolean } = {}): Q {
  if (!isPostgres(db)) return query;
  return options.skipLocked ? query.forUpdate().skipLocked() : query.forUpdate();
}

/**
 * `column` is one of `values`, as one statement whatever their number (a list of `?` would make
 * a new statement text, and a new prepared statement, for every length): Postgres binds an array
 * (`= any($1::text[])`), SQLite a JSON array it reads with `json_each`.
 */
export function isOneOf(db: Kysely<any>, column: string, values: readonly string[]): Expression<SqlBool> {
  return isPostgres(db)
    ? sql<SqlBool>`${sql.ref(column)} = any(${[...values]}::text[])`
    : sql<SqlBool>`${sql.ref(column)} in (select value from json_each(${JSON.stringify(values)}))`;
}
