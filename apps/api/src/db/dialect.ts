import { type Kysely, PostgresAdapter } from 'kysely';

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
