import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors.js';
import { RateLimits } from '../edge/rate-limits.js';
import { hashKey } from '../keys.js';
import { accountsService } from '../services/accounts.js';
import { ACTIVE_DIALECTS, startTestServer } from '../testing/harness.js';
import { apiKeysRepository } from './accounts.js';
import { counterKey, rateLimitsRepository } from './rate-limits.js';

describe.runIf(ACTIVE_DIALECTS.includes('postgres'))('Postgres rate-limit counters', () => {
  it('count a fixed window per account and start over once it has ended', async () => {
    const server = await startTestServer('postgres');
    try {
      const db = server.database.db;
      const t = 1_800_000_000_000;
      expect(await rateLimitsRepository.count(db, 'acct_x', t, 60_000)).toEqual({ points: 1, expire: t + 60_000 });
      expect(await rateLimitsRepository.count(db, 'acct_x', t + 30_000, 60_000)).toEqual({ points: 2, expire: t + 60_000 });
      expect(await rateLimitsRepository.count(db, 'acct_y', t + 30_000, 60_000)).toEqual({ points: 1, expire: t + 90_000 });
      expect(await rateLimitsRepository.count(db, 'acct_x', t + 59_999, 60_000)).toEqual({ points: 3, expire: t + 60_000 });
      expect(await rateLimitsRepository.count(db, 'acct_x', t + 60_000, 60_000)).toEqual({ points: 1, expire: t + 120_000 });
    } finally {
      await server.close();
    }
  });

  it('are counted by the key lookup itself, and not at all for an unknown or revoked key', async () => {
    const server = await startTestServer('postgres');
    try {
      const db = server.database.db;
      const account = await accountsService.createAccount(server.database, { name: 'Counted', plan: 'free' });
      const key = await accountsService.createKey(server.database, { accountId: account.id, type: 'full_access' });
      const t = 1_800_000_000_000;
      const first = await apiKeysRepository.findActiveByHashCounting(db, hashKey(key.key), t, 60_000);
      expect(first).toMatchObject({ id: key.id, account_id: account.id, account_plan: 'free', counted: { points: 1, expire: t + 60_000 } });
      expect((await apiKeysRepository.findActiveByHashCounting(db, hashKey(key.key), t + 1, 60_000))?.counted.points).toBe(2);
      expect(await apiKeysRepository.findActiveByHashCounting(db, hashKey('convo_sk_unknown'), t + 2, 60_000)).toBeUndefined();
      await accountsService.revokeKey(server.database, key.id);
      expect(await apiKeysRepository.findActiveByHashCounting(db, hashKey(key.key), t + 3, 60_000)).toBeUndefined();
      const rows = await db.selectFrom('rate_limits').selectAll().where('key', '=', counterKey(account.id)).execute();
      expect(rows).toEqual([{ key: counterKey(account.id), points: 2, expire: t + 60_000 }]);
    } finally {
      await server.close();
    }
  });
});

describe('rate-limit verdicts on counted requests', () => {
  it('admit up to the limit with the remaining count, then refuse with Retry-After', async () => {
    const server = await startTestServer('sqlite');
    try {
      const limits = RateLimits.create({ database: server.database });
      const t = 1_800_000_000_000;
      expect(limits.judge(60, { points: 1, expire: t + 60_000 }, t)).toEqual({ limit: 60, remaining: 59, resetAt: (t + 60_000) / 1000 });
      expect(limits.judge(60, { points: 60, expire: t + 60_000 }, t + 59_500)).toEqual({ limit: 60, remaining: 0, resetAt: (t + 60_000) / 1000 });
      let refused: unknown;
      try {
        limits.judge(60, { points: 61, expire: t + 60_000 }, t + 58_200);
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(ApiError);
      expect((refused as ApiError).status).toBe(429);
      expect((refused as ApiError).headers).toMatchObject({ 'Retry-After': '2', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Limit': '60' });
      await limits.close();
    } finally {
      await server.close();
    }
  });
});
