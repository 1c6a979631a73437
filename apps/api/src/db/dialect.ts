import { type Kysely, PostgresAdapter } from 'kysely';

/**
 * For migrations, which receive a bare Kysely instance: the few places where the DDL must
 * differ (a collation) ask here rather than testing driver names themselves.
 */
export const isPostgres = (db: Kysely<any>): boolean => db.getExecutor().adapter instanceof PostgresAdapter;
