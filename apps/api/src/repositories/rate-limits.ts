import { type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import type { Database } from '../db/schema.js';

/** The counted window of an account: requests so far and when the window ends (Unix ms). */
export interface CounterState {
  points: number;
  expire: number;
}

/** The counter row's key of an account, as text and as the SQL that makes it from an account id. */
export const counterKey = (accountId: string): string => `acct:${accountId}`;

/**
 * Counts `points` requests per row of `keys` (a query selecting the counter's `key`) in a fixed
 * window, atomically (one upsert of the account's row): a window that has ended starts over at
 * `points`. The returned `points` is the count after this one: the requests counted here are
 * numbers `points - n + 1` … `points` of the window. Usable as a CTE, so authentication can count
 * in the same statement (apiKeysRepository.findActiveByHashCounting). Postgres only: SQLite
 * counts in memory.
 */
export function countingUpsert(db: Kysely<Database>, keys: SelectQueryBuilder<any, any, { key: string }>, nowMs: number, windowMs: number, points = 1) {
  const ends = nowMs + windowMs;
  return db
    .insertInto('rate_limits')
    .columns(['key', 'points', 'expire'])
    .expression(keys.select([sql<number>`${points}::bigint`.as('points'), sql<number>`${ends}::bigint`.as('expire')]))
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        points: sql<number>`case when rate_limits.expire <= ${nowMs}::bigint then ${points}::bigint else rate_limits.points + ${points}::bigint end`,
        expire: sql<number>`case when rate_limits.expire <= ${nowMs}::bigint then ${ends}::bigint else rate_limits.expire end`,
      }),
    )
    .returning(['rate_limits.points', 'rate_limits.expire']);
}

export const rateLimitsRepository = {
  /** Counts `points` requests of the account (Postgres). */
  async count(db: Kysely<Database>, accountId: string, nowMs: number, windowMs: number, points = 1): Promise<CounterState> {
    const keys = db.selectNoFrom(sql<string>`${counterKey(accountId)}::text`.as('key'));
    const row = await countingUpsert(db, keys as never, nowMs, windowMs, points).executeTakeFirstOrThrow();
    return { points: Number(row.points), expire: Number(row.expire) };
  },
};
