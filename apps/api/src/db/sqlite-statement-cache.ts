import type SQLite from 'better-sqlite3';
import type { SqliteDatabase } from 'kysely';

/** Prepared statements kept per SQL text; the queries the API runs are a few hundred shapes. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely's SqliteDatabase over better-sqlite3 that keeps each prepared statement instead of parsing
 * and planning every query anew: it exists for the benchmark's get-by-id and list targets on SQLite
 * (bench/README.md). Beyond `size` statements the first prepared is dropped first; a hit changes
 * nothing (reordering a Map on every query cost more than the rare statement prepared again).
 * Reuse is safe: Kysely runs one query at a time on the connection and each call binds its own
 * parameters.
 */
export function withStatementCache(sqlite: SQLite.Database, size = STATEMENT_CACHE_SIZE): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>();
  return {
    prepare(text: string) {
      let statement = cache.get(text);
      if (!statement) {
        statement = sqlite.prepare(text);
        if (cache.size >= size) cache.delete(cache.keys().next().value as string);
        cache.set(text, statement);
      }
      return statement as unknown as ReturnType<SqliteDatabase['prepare']>;
    },
    close: () => sqlite.close(),
  };
}
