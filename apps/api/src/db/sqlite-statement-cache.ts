import type SQLite from 'better-sqlite3';
import type { SqliteDatabase } from 'kysely';

/** Prepared statements kept per SQL text; the queries the API runs are a few hundred shapes. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely's SqliteDatabase keeping each prepared statement; holds the SQLite read targets of bench/README.md.
 * Eviction is first-in first-out, since reordering on every hit costs more than a rare re-prepare. Reuse is safe:
 * Kysely runs one query at a time on the connection and each call binds its own parameters.
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
