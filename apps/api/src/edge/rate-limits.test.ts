import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors.js';
import { counterKey } from '../repositories/rate-limits.js';
import { accountsService } from '../services/accounts.js';
import { ACTIVE_DIALECTS, startTestServer } from '../testing/harness.js';
import { type CounterLock, lockCounter, unlessStuck } from '../testing/rate-limit-counters.js';
import { CounterBlocks, RateLimits, type RateLimitState } from './rate-limits.js';

const T = 1_800_000_000_000;

describe('counter blocks', () => {
  it('count one request at a time until an account has plenty left, then at most 1/64 of it, up to 100', () => {
    const blocks = new CounterBlocks();
    expect(blocks.sizeFor(undefined)).toBe(1);
    expect(blocks.sizeFor('acct_a')).toBe(1);
    blocks.keep('acct_a', 60, { next: 2, last: 1, expire: T + 60_000 });
    expect(blocks.sizeFor('acct_a')).toBe(1);
    blocks.keep('acct_b', 1_000, { next: 2, last: 1, expire: T + 60_000 });
    expect(blocks.sizeFor('acct_b')).toBe(15);
    blocks.keep('acct_c', 1_000_000, { next: 2, last: 1, expire: T + 60_000 });
    expect(blocks.sizeFor('acct_c')).toBe(100);
  });

  it('hand out each number of a block once, in order, and nothing once it is spent or its window is over', () => {
    const blocks = new CounterBlocks();
    blocks.noteKey('hash_a', 'acct_a');
    expect(blocks.accountOf('hash_a')).toBe('acct_a');
    expect(blocks.holds('acct_a', T)).toBe(false);
    blocks.keep('acct_a', 1_000, { next: 11, last: 13, expire: T + 60_000 });
    blocks.keep('acct_a', 1_000, { next: 21, last: 21, expire: T + 60_000 });
    expect(blocks.holds('acct_a', T)).toBe(true);
    const taken = [1, 2, 3, 4].map(() => blocks.take('acct_a', 1_000, T)?.remaining);
    expect(taken).toEqual([989, 988, 987, 979]);
    expect(blocks.take('acct_a', 1_000, T)).toBeUndefined();
    expect(blocks.holds('acct_a', T)).toBe(false);

    blocks.keep('acct_a', 1_000, { next: 31, last: 40, expire: T + 60_000 });
    expect(blocks.take('acct_a', 1_000, T + 60_000)).toBeUndefined();
  });

  it('run low at half a block, only while counting more than one request at a time', () => {
    const blocks = new CounterBlocks();
    expect(blocks.runningLow('acct_a', T)).toBe(false);
    // 1,000,000 left: blocks of 100; 60 held, then 50.
    blocks.keep('acct_a', 1_000_000, { next: 41, last: 100, expire: T + 60_000 });
    expect(blocks.runningLow('acct_a', T)).toBe(false);
    for (let i = 0; i < 10; i++) blocks.take('acct_a', 1_000_000, T);
    expect(blocks.runningLow('acct_a', T)).toBe(true);
    // A block of a window that is over holds nothing.
    blocks.keep('acct_b', 1_000_000, { next: 1, last: 100, expire: T + 60_000 });
    expect(blocks.runningLow('acct_b', T)).toBe(false);
    expect(blocks.runningLow('acct_b', T + 60_000)).toBe(true);
    // Near the limit every request is counted by itself: nothing to count ahead.
    blocks.keep('acct_c', 100, { next: 2, last: 1, expire: T + 60_000 });
    expect(blocks.sizeFor('acct_c')).toBe(1);
    expect(blocks.runningLow('acct_c', T)).toBe(false);
  });

  it('hand out blocks in the order of their numbers, whichever was kept first', () => {
    const blocks = new CounterBlocks();
    blocks.keep('acct_a', 1_000, { next: 21, last: 22, expire: T + 60_000 });
    blocks.keep('acct_a', 1_000, { next: 11, last: 12, expire: T + 60_000 });
    blocks.keep('acct_a', 1_000, { next: 31, last: 31, expire: T + 60_000 });
    blocks.keep('acct_a', 1_000, { next: 15, last: 15, expire: T + 60_000 });
    const taken = [1, 2, 3, 4, 5, 6].map(() => blocks.take('acct_a', 1_000, T)?.remaining);
    expect(taken).toEqual([989, 988, 985, 979, 978, 969]);
  });

  it('hand out nothing past a limit that was lowered after they were counted', () => {
    const blocks = new CounterBlocks();
    blocks.keep('acct_a', 1_000, { next: 501, last: 600, expire: T + 60_000 });
    expect(blocks.take('acct_a', 1_000, T)?.remaining).toBe(499);
    expect(blocks.take('acct_a', 300, T)).toBeUndefined();
    expect(blocks.take('acct_a', 1_000, T)).toBeUndefined();
  });
});

describe.runIf(ACTIVE_DIALECTS.includes('postgres'))('Postgres rate limits counted in blocks', () => {
  const consumeAll = async (limits: RateLimits, accountId: string, limit: number, n: number) => {
    const states: (RateLimitState | 'refused')[] = [];
    for (let i = 0; i < n; i++) {
      try {
        states.push(await limits.consume(accountId, limit));
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 429) throw error;
        states.push('refused');
      }
    }
    return states;
  };

  it('give two processes disjoint numbers, never more than the limit, and write the counter once per block', async () => {
    const server = await startTestServer('postgres');
    const a = RateLimits.create({ database: server.database });
    const b = RateLimits.create({ database: server.database });
    try {
      const account = await accountsService.createAccount(server.database, { name: 'Blocks', plan: 'enterprise', rateLimitRpm: 20_000 });
      const [fromA, fromB] = await Promise.all([consumeAll(a, account.id, 20_000, 500), consumeAll(b, account.id, 20_000, 500)]);
      const remaining = [...fromA, ...fromB].map((s) => (s === 'refused' ? -1 : s.remaining));
      expect(remaining.filter((r) => r < 0)).toEqual([]);
      expect(new Set(remaining).size).toBe(1_000);
      // Blocks were counted: the counter is ahead of the requests served, by what the blocks hold.
      const row = await server.database.db.selectFrom('rate_limits').selectAll().where('key', '=', counterKey(account.id)).executeTakeFirstOrThrow();
      expect(row.points).toBeGreaterThan(1_000);
      // Each process holds at most the rest of its block and the next one, counted ahead.
      expect(row.points).toBeLessThanOrEqual(1_000 + 2 * (50 + 100));
      expect(Math.min(...remaining)).toBeGreaterThanOrEqual(20_000 - row.points);
    } finally {
      await a.close();
      await b.close();
      await server.close();
    }
  });

  /** The sessions waiting for the counter's lock, once there are `n` of them (or after 5 s, as many as there are). */
  const waitingFor = async (server: Awaited<ReturnType<typeof startTestServer>>, lockPid: number, n: number) => {
    for (let attempt = 0; ; attempt++) {
      const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity where ${lockPid} = any(pg_blocking_pids(pid))`.execute(server.database.db);
      if (rows.length >= n || attempt === 100) return rows.map((row) => row.pid);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  /** The account's counter: requests counted in its window so far. */
  const pointsOf = async (server: Awaited<ReturnType<typeof startTestServer>>, accountId: string) =>
    (await server.database.db.selectFrom('rate_limits').select('points').where('key', '=', counterKey(accountId)).executeTakeFirstOrThrow()).points;

  /**
   * One process's rate limits for an account with a limit of 1,000,000, after its first two
   * requests (the first counted alone, nothing being known of the account; the second with the 99
   * after it: numbers 2 to 101), with the account's counter row locked until the test releases it.
   */
  const withLockedCounter = async (
    name: string,
    test: (ctx: { server: Awaited<ReturnType<typeof startTestServer>>; limits: RateLimits; accountId: string; limit: number; counter: CounterLock }) => Promise<void>,
  ) => {
    const server = await startTestServer('postgres');
    const limits = RateLimits.create({ database: server.database });
    let counter: CounterLock | undefined;
    try {
      const limit = 1_000_000;
      const account = await accountsService.createAccount(server.database, { name, plan: 'enterprise', rateLimitRpm: limit });
      await consumeAll(limits, account.id, limit, 2);
      counter = await lockCounter(server.database, account.id);
      await test({ server, limits, accountId: account.id, limit, counter });
    } finally {
      await counter?.release();
      await limits.close();
      await server.close();
    }
  };

  it('count the next block in the background at half a block, so no request waits for a count', () =>
    withLockedCounter('Ahead', async ({ server, limits, accountId, limit, counter }) => {
      // 49 more leave half a block: the 49th starts the count of the next block, which waits for
      // the lock; the next 50 are the block's own, served while it waits.
      const served = await unlessStuck(consumeAll(limits, accountId, limit, 99));
      expect(served).not.toBe('waiting');
      expect((served as RateLimitState[]).map((s) => s.remaining)).toEqual(Array.from({ length: 99 }, (_, i) => limit - 3 - i));
      // One count waits for the lock: the background one.
      expect(await waitingFor(server, counter.pid, 1)).toHaveLength(1);
      await counter.release();
      await limits.counted();
      expect(await pointsOf(server, accountId)).toBe(1 + 100 + 100);
      // The next request takes the first number of the block counted ahead.
      expect((await limits.consume(accountId, limit)).remaining).toBe(limit - 102);
    }));

  it('drop a background count that fails, writing nothing, and count ahead again at the next request', () =>
    withLockedCounter('Dropped', async ({ server, limits, accountId, limit, counter }) => {
      await consumeAll(limits, accountId, limit, 49);
      // The background count waits for the lock; its connection is cut.
      const waiting = await waitingFor(server, counter.pid, 1);
      expect(waiting).toHaveLength(1);
      await sql`select pg_terminate_backend(${waiting[0]})`.execute(server.database.db);
      await limits.counted();
      await counter.release();
      expect(await pointsOf(server, accountId)).toBe(1 + 100);
      // The rest of the block; its first request, still running low, counts ahead again.
      const rest = await consumeAll(limits, accountId, limit, 50);
      expect(rest.map((s) => (s === 'refused' ? -1 : s.remaining))).toEqual(Array.from({ length: 50 }, (_, i) => limit - 52 - i));
      await limits.counted();
      expect(await pointsOf(server, accountId)).toBe(1 + 100 + 100);
      expect((await limits.consume(accountId, limit)).remaining).toBe(limit - 102);
    }));

  it('count one by one near the limit: exactly the limit is admitted across two processes', async () => {
    const server = await startTestServer('postgres');
    const a = RateLimits.create({ database: server.database });
    const b = RateLimits.create({ database: server.database });
    try {
      const limit = 300;
      const account = await accountsService.createAccount(server.database, { name: 'Near the limit', plan: 'enterprise', rateLimitRpm: limit });
      // Each process alone asks for the whole limit: by its last requests fewer than 128 are left,
      // so it counts one by one and ends holding no block, whatever the interleaving.
      const [fromA, fromB] = await Promise.all([consumeAll(a, account.id, limit, limit), consumeAll(b, account.id, limit, limit)]);
      const admitted = [...fromA, ...fromB].filter((s): s is RateLimitState => s !== 'refused');
      expect(admitted).toHaveLength(limit);
      expect(new Set(admitted.map((s) => s.remaining))).toEqual(new Set(Array.from({ length: limit }, (_, i) => i)));
    } finally {
      await a.close();
      await b.close();
      await server.close();
    }
  });
});
