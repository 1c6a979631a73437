import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterPostgres } from 'rate-limiter-flexible';
import type { DatabaseHandle } from './database.js';

/** What a limiter counts: the library's own options, its store aside. */
export interface CountedOptions {
  /** Keeps one limiter's keys apart from another's in the shared table. */
  keyPrefix: string;
  /** Actions allowed per window. */
  points: number;
  /** The window, in seconds. */
  duration: number;
}

/** A statement as the store sends it. */
type StoreQuery = { text: string; values?: unknown[] };

/**
 * A rate-limiter-flexible limiter whose counts live with the database: on Postgres in the
 * `rate_limits` table, shared by every process on that database; on SQLite in this process's
 * memory (a SQLite deployment is one process).
 */
export function databaseRateLimiter(database: DatabaseHandle, options: CountedOptions): RateLimiterAbstract {
  const pool = database.pgPool;
  if (!pool) return new RateLimiterMemory(options);
  // The store names its statements; behind a transaction-mode pooler, which does not keep a server
  // connection's named statements, its client sends them unnamed.
  const unnamed = { query: (query: StoreQuery) => pool.query(query.text, query.values) };
  const storeClient = database.preparedStatements ? pool : unnamed;
  return new RateLimiterPostgres({
    ...options,
    storeClient,
    storeType: 'pool',
    // Migration 0003 creates the table in the library's layout, so concurrent starts never race to.
    tableName: 'rate_limits',
    tableCreated: true,
    // A row per key, reused by each window: nothing piles up to sweep, and the sweep's timer (one
    // per limiter) is one that nothing could stop.
    clearExpiredByTimeout: false,
  });
}
