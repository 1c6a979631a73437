import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors.js';
import { counterKey } from '../repositories/rate-limits.js';
import { accountsService } from '../services/accounts.js';
import { ACTIVE_DIALECTS, startTestServer } from '../testing/harness.js';
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
      expect(row.points).toBeLessThanOrEqual(1_000 + 2 * 100);
      expect(Math.min(...remaining)).toBeGreaterThanOrEqual(20_000 - row.points);
    } finally {
      await a.close();
      await b.close();
      await server.close();
    }
  });

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
