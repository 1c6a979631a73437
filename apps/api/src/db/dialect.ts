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
 * A list of ids as one bound value, whatever its length (a list of `?` would make a new statement
 * text, and a new prepared statement, for every length): Postgres an array, SQLite the JSON text
 * of one. Computed before a statement compiled once (preparedByShape) binds it.
 */
export const boundList = (db: Kysely<any>, values: readonly string[]): string[] | string => (isPostgres(db) ? [...values] : JSON.stringify(values));

/**
 * `column` is one of the ids of `list` (boundList): Postgres `= any($1::text[])`, SQLite a JSON
 * array it reads with `json_each`.
 */
export function isOneOf(db: Kysely<any>, column: string, list: string[] | string): Expression<SqlBool> {
  return isPostgres(db)
    ? sql<SqlBool>`${sql.ref(column)} = any(${planAlike(db, list, 'text[]')}::text[])`
    : sql<SqlBool>`${sql.ref(column)} in (select value from json_each(${list}))`;
}

/**
 * A value whose plan does not depend on it, bound so that Postgres does not plan the statement
 * again for it: `(select $1::type)`, an uncorrelated subquery the planner evaluates once at run
 * time and never looks into (it still drives an index: `col = (select $1)` is an index condition).
 * On SQLite, which plans each prepared statement once anyway, the plain parameter.
 *
 * Why: a named statement (executeNamed) is planned anew at every execution while Postgres finds
 * its generic plan dearer than the plans made for the values, and what made it dearer were the
 * values themselves: a LIKE pattern's selectivity, an OFFSET of 0, an array's length. For the
 * search statements that planning took longer than running them (0.3-0.5 ms against 0.06-0.35 ms
 * per statement, bench/README.md). With the values out of the planner's sight the generic plan
 * costs the same as the custom ones, so from the sixth execution on each connection Postgres
 * keeps it and only binds and runs. Use it only where every value gets the same plan: not for a
 * LIMIT (unknown, it is taken for a tenth of the rows and a page of 20 was planned as a hash join
 * over every conversation: 60 ms instead of 0.2), nor an equality an index's order depends on
 * (`status = (select …)` does not let the status index give the order), nor a LIKE fragment too
 * short for the trigram indexes (likePattern). As `= any(…)` an array needs a cast after it,
 * or the subquery is taken for ANY's set of rows (isOneOf).
 */
export function planAlike(db: Kysely<any>, value: unknown, type: 'text' | 'bigint' | 'text[]'): Expression<any> {
  return isPostgres(db) ? sql`(select ${value}::${sql.raw(type)})` : sql`${value}`;
}
