import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { ApiError } from '../errors.js';
import { binariesAvailable, startRedis, stopAll } from '../resilience/processes.js';
import { type TestDatabase, createTestDatabase, postgresAvailable } from '../testing/databases.js';
import { RateLimits, type RateLimitState, rateLimitHeaders } from './rate-limits.js';

const REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

/**
 * Whether the machine's Redis answers; like Postgres, a missing one skips its tests, or fails the run under CI=true.
 */
async function redisAvailable(): Promise<boolean> {
  const client = new Redis(REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 2_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch (error) {
    if (process.env.CI === 'true')
      throw new Error(`Redis is required under CI=true but ${REDIS_URL} is unreachable: ${String(error)}`);
    console.warn(`Redis at ${REDIS_URL} is unreachable; its tests are skipped (${String(error)})`);
    return false;
  } finally {
    client.disconnect();
  }
}

const HAVE_POSTGRES = await postgresAvailable();
const HAVE_REDIS = await redisAvailable();

/** An account id no other test (or earlier run against the shared Redis) has counted. */
const freshAccount = () => `acct_${randomBytes(8).toString('hex')}`;

/** Each request's verdict: its state, or the 429 that refused it. */
async function settle(requests: Promise<RateLimitState>[]): Promise<(RateLimitState | ApiError)[]> {
  return Promise.all(
    requests.map((request) =>
      request.catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 429) return error;
        throw error;
      }),
    ),
  );
}

const served = (verdicts: (RateLimitState | ApiError)[]) =>
  verdicts.filter((v): v is RateLimitState => !(v instanceof ApiError));
const refused = (verdicts: (RateLimitState | ApiError)[]) =>
  verdicts.filter((v): v is ApiError => v instanceof ApiError);
const countdown = (limit: number, n = limit) => Array.from({ length: n }, (_, i) => limit - 1 - i);

/** The 429 of a request past the limit. */
async function refusal(request: Promise<unknown>): Promise<ApiError> {
  const error = await request.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ApiError);
  expect((error as ApiError).status).toBe(429);
  expect((error as ApiError).code).toBe('rate_limited');
  return error as ApiError;
}

/** A deployment's store as the tests use it. */
interface Store {
  kind: 'memory' | 'postgres' | 'redis';
  /** The rate limits of one more server process on this store (on Postgres, with a pool of its own). */
  open(): Promise<RateLimits>;
  /** Ends the account's current window in the store, as the minute's passing does. */
  endWindow(accountId: string): Promise<void>;
  close(): Promise<void>;
}

/** Moves this process's clock past the window (the memory and Postgres stores take the time from it). */
const pastTheMinute = async (): Promise<void> => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(Date.now() + 61_000);
};

function memoryStore(): Store {
  const opened: RateLimits[] = [];
  const database = openDatabase(':memory:');
  return {
    kind: 'memory',
    async open() {
      const limits = RateLimits.create({ database });
      opened.push(limits);
      return limits;
    },
    endWindow: pastTheMinute,
    async close() {
      for (const limits of opened) await limits.close();
      await database.destroy();
    },
  };
}

async function postgresStore(): Promise<Store> {
  const testDatabase: TestDatabase = await createTestDatabase('postgres');
  const processes: { database: DatabaseHandle; limits: RateLimits }[] = [];
  const setup = openDatabase(testDatabase.url);
  await migrateToLatest(setup.db);
  await setup.destroy();
  return {
    kind: 'postgres',
    async open() {
      const database = openDatabase(testDatabase.url);
      const limits = RateLimits.create({ database });
      processes.push({ database, limits });
      return limits;
    },
    endWindow: pastTheMinute,
    async close() {
      for (const { database, limits } of processes) {
        await limits.close();
        await database.destroy();
      }
      await testDatabase.drop();
    },
  };
}

function redisStore(url = REDIS_URL): Store {
  const opened: RateLimits[] = [];
  // Never used for counting while Redis is configured; the store only needs to know there is one.
  const database = openDatabase(':memory:');
  const admin = new Redis(url, { lazyConnect: true });
  return {
    kind: 'redis',
    async open() {
      const limits = RateLimits.create({ database, redisUrl: url });
      opened.push(limits);
      return limits;
    },
    async endWindow(accountId) {
      // Redis keeps the window's time itself: its counter expires.
      for (const key of await admin.keys(`*:${accountId}`)) await admin.pexpire(key, 1);
      await vi.waitFor(async () => expect(await admin.keys(`*:${accountId}`)).toEqual([]), { interval: 5 });
    },
    async close() {
      for (const limits of opened) await limits.close();
      admin.disconnect();
      await database.destroy();
    },
  };
}

type StoreMaker = [Store['kind'], () => Promise<Store> | Store];
const STORES: StoreMaker[] = [
  ['memory', memoryStore],
  ...(HAVE_POSTGRES ? [['postgres', postgresStore] satisfies StoreMaker] : []),
  ...(HAVE_REDIS ? [['redis', () => redisStore()] satisfies StoreMaker] : []),
];

afterEach(() => {
  vi.useRealTimers();
});

describe.each(STORES)('rate limits on the %s store', (kind, make) => {
  let store: Store;
  beforeAll(async () => {
    store = await make();
  });
  afterAll(() => store?.close());

  it('is the store the deployment asked for', async () => {
    expect((await store.open()).store).toBe(kind);
  });

  it('serve a burst of L concurrent requests on a fresh window in full, then refuse the next with 429, the headers and Retry-After', async () => {
    const limits = await store.open();
    const limit = 600;
    const account = freshAccount();
    const before = Date.now();
    const verdicts = await settle(Array.from({ length: limit }, () => limits.consume(account, limit)));
    expect(refused(verdicts)).toHaveLength(0);
    const states = served(verdicts);
    expect(states.map((s) => s.remaining).sort((a, b) => b - a)).toEqual(countdown(limit));
    for (const state of states) {
      expect(state.limit).toBe(limit);
      expect(state.resetAt).toBeGreaterThan(before / 1000);
      expect(state.resetAt).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 60);
    }

    const error = await refusal(limits.consume(account, limit));
    expect(error.message).toMatch(/600 requests per minute/);
    expect(error.headers).toMatchObject({ 'X-RateLimit-Limit': '600', 'X-RateLimit-Remaining': '0' });
    const resetAt = Number(error.headers['X-RateLimit-Reset']);
    expect(Math.abs(resetAt - Math.max(...states.map((s) => s.resetAt)))).toBeLessThanOrEqual(1);
    const retryAfter = Number(error.headers['Retry-After']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);

    // Another account's minute is its own.
    expect((await limits.consume(freshAccount(), limit)).remaining).toBe(limit - 1);
  });

  it('serve in full a burst that follows the window’s first request, each request with a count of its own', async () => {
    const limits = await store.open();
    const limit = 600;
    const account = freshAccount();
    expect((await limits.consume(account, limit)).remaining).toBe(limit - 1);
    const verdicts = await settle(Array.from({ length: limit - 1 }, () => limits.consume(account, limit)));
    expect(refused(verdicts)).toHaveLength(0);
    expect(
      served(verdicts)
        .map((s) => s.remaining)
        .sort((a, b) => b - a),
    ).toEqual(countdown(limit - 1));
    await refusal(limits.consume(account, limit));
  });

  it('count the remaining requests down one by one, and start a fresh window once the minute is over', async () => {
    const limits = await store.open();
    const account = freshAccount();
    const states: RateLimitState[] = [];
    for (let i = 0; i < 5; i++) states.push(await limits.consume(account, 5));
    expect(states.map((s) => s.remaining)).toEqual([4, 3, 2, 1, 0]);
    const resetAt = states[0]?.resetAt as number;
    for (const state of states) expect(Math.abs(state.resetAt - resetAt)).toBeLessThanOrEqual(1);
    await refusal(limits.consume(account, 5));

    await store.endWindow(account);
    const fresh = await limits.consume(account, 5);
    expect(fresh.remaining).toBe(4);
    expect(fresh.resetAt).toBeGreaterThanOrEqual(resetAt);
  });
});

describe.each(STORES.filter(([kind]) => kind !== 'memory'))(
  'two server processes sharing the %s store',
  (_kind, make) => {
    let store: Store;
    let a: RateLimits;
    let b: RateLimits;
    beforeAll(async () => {
      store = await make();
      a = await store.open();
      b = await store.open();
    });
    afterAll(() => store?.close());

    it('serve exactly L of a concurrent burst of L + k between them, each with a count of its own', async () => {
      const limit = 300;
      const account = freshAccount();
      const verdicts = await settle(
        Array.from({ length: limit + 100 }, (_, i) => (i % 2 ? b : a).consume(account, limit)),
      );
      const states = served(verdicts);
      expect(states).toHaveLength(limit);
      expect(states.map((s) => s.remaining).sort((x, y) => y - x)).toEqual(countdown(limit));
      expect(refused(verdicts)).toHaveLength(100);
      for (const error of refused(verdicts))
        expect(error.headers).toMatchObject({ 'X-RateLimit-Remaining': '0', 'X-RateLimit-Limit': String(limit) });
    });

    it('count one request at a time, in order, whichever process serves it', async () => {
      const limit = 200;
      const account = freshAccount();
      const remaining: (number | 'refused')[] = [];
      for (let i = 0; i < limit + 10; i++) {
        const [verdict] = await settle([(i % 2 ? b : a).consume(account, limit)]);
        remaining.push(verdict instanceof ApiError ? 'refused' : (verdict as RateLimitState).remaining);
      }
      expect(remaining).toEqual([...countdown(limit), ...Array.from({ length: 10 }, () => 'refused')]);
    });
  },
);

describe.runIf(HAVE_POSTGRES)('the Postgres store', () => {
  it('counts in the unlogged rate_limits table that the migrations made', async () => {
    const testDatabase = await createTestDatabase('postgres');
    const database = openDatabase(testDatabase.url);
    const limits = RateLimits.create({ database });
    try {
      await migrateToLatest(database.db);
      const account = freshAccount();
      for (let i = 0; i < 3; i++) await limits.consume(account, 60);
      const rows = await database.db
        .selectFrom('rate_limits')
        .select(['points', 'expire'])
        .where('key', 'like', `%:${account}`)
        .execute();
      expect(rows).toHaveLength(1);
      expect(rows[0]?.points).toBe(3);
      expect(Number(rows[0]?.expire)).toBeGreaterThan(Date.now());
      const { rows: table } = await sql<{
        relpersistence: string;
      }>`select relpersistence from pg_class where relname = 'rate_limits'`.execute(database.db);
      expect(table).toEqual([{ relpersistence: 'u' }]);
    } finally {
      await limits.close();
      await database.destroy();
      await testDatabase.drop();
    }
  });
});

describe.runIf(HAVE_POSTGRES)('rate limits on a Postgres store that fails', () => {
  it('fail the request with the store’s error: no 429, and no count of the process’s own', async () => {
    // A database without the counters' table: every count fails, as it does while Postgres is away.
    const testDatabase = await createTestDatabase('postgres');
    const database = openDatabase(testDatabase.url);
    const limits = RateLimits.create({ database });
    try {
      expect(limits.store).toBe('postgres');
      for (let i = 0; i < 3; i++) {
        const error = await limits.consume(freshAccount(), 60).then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error).toBeInstanceOf(Error);
        expect(error).not.toBeInstanceOf(ApiError);
        expect(String(error)).toMatch(/rate_limits/);
      }
    } finally {
      await limits.close();
      await database.destroy();
      await testDatabase.drop();
    }
  });
});

describe.runIf(HAVE_REDIS && binariesAvailable(['redis-server'], 'the Redis insurance test'))(
  'rate limits once Redis is gone',
  () => {
    afterAll(() => stopAll());

    it('limit each process alone in memory at the account’s size (the insurance limiter), answering at once', async () => {
      const redis = await startRedis();
      const store = redisStore(redis.url);
      try {
        const limits = await store.open();
        const account = freshAccount();
        expect((await limits.consume(account, 20)).remaining).toBe(19);
        await redis.kill();
        const started = Date.now();
        const verdicts = await settle(Array.from({ length: 25 }, () => limits.consume(account, 20)));
        expect(served(verdicts)).toHaveLength(20);
        expect(
          served(verdicts)
            .map((s) => s.remaining)
            .sort((x, y) => y - x),
        ).toEqual(countdown(20));
        expect(refused(verdicts)).toHaveLength(5);
        expect(Date.now() - started).toBeLessThan(3_000);
      } finally {
        await store.close();
      }
    });
  },
);

describe('failed authentications', () => {
  it('are limited per client address, never against an account', async () => {
    const database = openDatabase(':memory:');
    const limits = RateLimits.create({ database, authFailuresPerMinute: 3 });
    try {
      for (let i = 0; i < 3; i++) await limits.authenticationFailed('192.0.2.1');
      const error = await refusal(limits.authenticationFailed('192.0.2.1'));
      expect(Number(error.headers['Retry-After'])).toBeGreaterThanOrEqual(1);
      expect(error.headers['X-RateLimit-Limit']).toBeUndefined();
      // Another address, and the accounts, are untouched.
      await limits.authenticationFailed('192.0.2.2');
      expect((await limits.consume(freshAccount(), 60)).remaining).toBe(59);
    } finally {
      await limits.close();
      await database.destroy();
    }
  });
});

describe('rateLimitHeaders', () => {
  it('are the limit, the remaining requests and the reset in Unix seconds', () => {
    expect(rateLimitHeaders({ limit: 60, remaining: 59, resetAt: 1_800_000_060 })).toEqual({
      'X-RateLimit-Limit': '60',
      'X-RateLimit-Remaining': '59',
      'X-RateLimit-Reset': '1800000060',
    });
  });
});
