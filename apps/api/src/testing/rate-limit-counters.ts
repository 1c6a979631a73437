import type { DatabaseHandle } from '../db/database.js';
import { counterKey } from '../repositories/rate-limits.js';

/** An account's rate-limit counter row held by another transaction (Postgres) until `release`. */
export interface CounterLock {
  /** The backend holding the lock: the sessions waiting for it name it in pg_blocking_pids. */
  pid: number;
  /** Commits the transaction (once; later calls do nothing), and every count waiting for the row goes on. */
  release(): Promise<void>;
}

/** Locks the account's counter row in a transaction of its own: every count of the account waits until `release`. */
export async function lockCounter(database: DatabaseHandle, accountId: string): Promise<CounterLock> {
  const client = await (database.pgPool as NonNullable<DatabaseHandle['pgPool']>).connect();
  await client.query('begin');
  await client.query('select points from rate_limits where key = $1 for update', [counterKey(accountId)]);
  const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
  let held = true;
  return {
    pid: (rows[0] as { pid: number }).pid,
    release: async () => {
      if (!held) return;
      held = false;
      await client.query('commit');
      client.release();
    },
  };
}

/** `promise`, or 'waiting' if it has not settled within a few seconds: a request stuck behind a lock. */
export const unlessStuck = <T>(promise: Promise<T>, ms = 3_000): Promise<T | 'waiting'> =>
  Promise.race([promise, new Promise<'waiting'>((resolve) => setTimeout(() => resolve('waiting'), ms))]);
