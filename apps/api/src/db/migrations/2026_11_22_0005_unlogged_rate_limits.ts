import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../dialect.js';

/**
 * Postgres: the rate-limit counters leave the write-ahead log. Every API request updates its
 * account's counter row; logged, each of those updates waited for a WAL flush while holding the
 * row's lock, so an account's requests queued behind one another's disk syncs (the benchmark's
 * hottest wait, bench/README.md). The counters live for a minute: a Postgres crash empties an
 * unlogged table, which at worst gives every account a fresh window once. SQLite keeps its
 * counters in memory and has no such table in use.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await sql`alter table rate_limits set unlogged`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) await sql`alter table rate_limits set logged`.execute(db);
}
