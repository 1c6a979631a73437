import { createRequire } from 'node:module';
import type { Redis as RedisClient } from 'ioredis';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { DatabaseHandle } from '../db/database.js';
import { databaseRateLimiter } from '../db/rate-limiter-store.js';
import { ApiError } from '../errors.js';
import { type Shared, coalesced } from './coalesced-calls.js';

/** An account's window: a fixed minute from its first request. */
const WINDOW_SECONDS = 60;

/** What the client is told on every authenticated response. */
export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix seconds at which the window resets. */
  resetAt: number;
}

/** The contract's rate-limit headers of a state. */
export const rateLimitHeaders = (state: RateLimitState): Record<string, string> => ({
  'X-RateLimit-Limit': String(state.limit),
  'X-RateLimit-Remaining': String(state.remaining),
  'X-RateLimit-Reset': String(state.resetAt),
});

/** Where the counts live: this process's memory, the Postgres database, or Redis. */
export type RateLimitStore = 'memory' | 'postgres' | 'redis';

export interface RateLimitsOptions {
  database: DatabaseHandle;
  /** Redis for the counts (REDIS_URL); when set, it is the store whatever the database. */
  redisUrl?: string | undefined;
  /** What the counters' Redis keys begin with (CONVO_REDIS_PREFIX), `convo:` by default. */
  redisPrefix?: string;
  /** Failed authentications allowed per client address and minute. */
  authFailuresPerMinute?: number;
}

/**
 * Requests per minute per account, across all its keys and every server process that shares the
 * store, counted by rate-limiter-flexible: Redis when REDIS_URL is set, else the database's
 * `rate_limits` table when it is Postgres, else memory (a SQLite deployment is one process).
 * One limiter per limit value, since a limiter's size is fixed when it is made.
 *
 * When Redis fails, an in-memory limiter of the same size takes over in each process (the
 * library's insurance limiter), so requests are still served. Postgres has none: the key is looked
 * up in the same database on every request, so a request that cannot be counted fails anyway, and
 * counting it in memory would only let each process admit the whole limit on its own.
 */
export class RateLimits {
  private readonly limiters = new Map<number, { limiter: RateLimiterAbstract; counts: CoalescedCounts }>();
  /** Failed authentications per client address: a brute-force guard that never touches accounts. */
  private readonly authFailures: RateLimiterMemory;
  /** Until it settles, counts wait for it (Redis: the client's first connection attempt). */
  private starting: Promise<void> | undefined;

  private constructor(
    /** The store in use. */
    readonly store: RateLimitStore,
    private readonly makeLimiter: (points: number) => RateLimiterAbstract,
    private readonly stop: () => void,
    authFailuresPerMinute: number,
    starting?: Promise<void>,
  ) {
    this.authFailures = new RateLimiterMemory({
      keyPrefix: 'auth-fail',
      points: authFailuresPerMinute,
      duration: WINDOW_SECONDS,
    });
    this.starting = starting?.then(() => {
      this.starting = undefined;
    });
  }

  static create(options: RateLimitsOptions): RateLimits {
    const authFailuresPerMinute = options.authFailuresPerMinute ?? 30;
    const inMemory = (points: number) =>
      new RateLimiterMemory({ keyPrefix: `rpm${points}`, points, duration: WINDOW_SECONDS });

    if (options.redisUrl) {
      // Loaded only when configured: the client is a few MB of resident memory.
      const { Redis } = createRequire(import.meta.url)('ioredis') as { Redis: typeof RedisClient };
      // Fail fast while Redis is away instead of queueing commands: the insurance limiter answers.
      const redis = new Redis(options.redisUrl, {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        connectTimeout: 2000,
        commandTimeout: 500,
      });
      redis.on('error', () => {});
      // Without an offline queue, every count before the connection is up would go to the
      // insurance limiter, each process counting alone; the first ones wait for it instead.
      const firstAttempt = new Promise<void>((resolve) => {
        for (const event of ['ready', 'error', 'end']) redis.once(event, () => resolve());
      });
      return new RateLimits(
        'redis',
        (points) =>
          new RateLimiterRedis({
            storeClient: redis,
            keyPrefix: `${options.redisPrefix ?? 'convo:'}rpm${points}`,
            points,
            duration: WINDOW_SECONDS,
            insuranceLimiter: inMemory(points),
          }),
        () => redis.disconnect(),
        authFailuresPerMinute,
        firstAttempt,
      );
    }

    const { database } = options;
    return new RateLimits(
      database.pgPool ? 'postgres' : 'memory',
      (points) => databaseRateLimiter(database, { keyPrefix: `rpm${points}`, points, duration: WINDOW_SECONDS }),
      () => {},
      authFailuresPerMinute,
    );
  }

  private limiterFor(points: number): { limiter: RateLimiterAbstract; counts: CoalescedCounts } {
    let made = this.limiters.get(points);
    if (!made) {
      const limiter = this.makeLimiter(points);
      made = { limiter, counts: new CoalescedCounts(limiter) };
      this.limiters.set(points, made);
    }
    return made;
  }

  /**
   * Counts one request of the account against `limit` requests per minute. Past the limit it
   * throws 429 `rate_limited` carrying the rate-limit headers and Retry-After; a store that fails
   * (Postgres) throws its own error. The account's concurrent requests share store calls
   * (CoalescedCounts), each with a count of its own.
   */
  async consume(accountId: string, limit: number): Promise<RateLimitState> {
    if (this.starting !== undefined) await this.starting;
    const { consumed, msBeforeNext } = await this.limiterFor(limit).counts.count(accountId);
    if (consumed > limit) throw rateLimited(limit, msBeforeNext);
    return { limit, remaining: limit - consumed, resetAt: resetAt(msBeforeNext) };
  }

  /**
   * The account's window as it stands, without counting a request: for a request refused before
   * it is counted (a webhook key), which still carries the rate-limit headers.
   */
  async peek(accountId: string, limit: number): Promise<RateLimitState> {
    if (this.starting !== undefined) await this.starting;
    const window = await this.limiterFor(limit).limiter.get(accountId);
    return {
      limit,
      remaining: Math.max(0, limit - (window?.consumedPoints ?? 0)),
      resetAt: resetAt(window?.msBeforeNext ?? WINDOW_SECONDS * 1000),
    };
  }

  /** Records a failed authentication from `address`; throws 429 once the address has failed too often. */
  async authenticationFailed(address: string): Promise<void> {
    try {
      await this.authFailures.consume(address);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const retryAfter = retryAfterSeconds(rejection.msBeforeNext);
      throw new ApiError(
        'rate_limited',
        `Too many failed authentications from this address; retry in ${retryAfter} s`,
        undefined,
        {
          'Retry-After': String(retryAfter),
        },
      );
    }
  }

  /** Closes the store's own connection (Redis); the database's pool stays its owner's to close. */
  async close(): Promise<void> {
    this.stop();
  }
}

const resetAt = (msBeforeNext: number) => Math.ceil((Date.now() + Math.max(0, msBeforeNext)) / 1000);
const retryAfterSeconds = (msBeforeNext: number) => Math.max(1, Math.ceil(msBeforeNext / 1000));

/** 429 `rate_limited` with the rate-limit headers and Retry-After. */
function rateLimited(limit: number, msBeforeNext: number): ApiError {
  const retryAfter = retryAfterSeconds(msBeforeNext);
  return new ApiError(
    'rate_limited',
    `Rate limit of ${limit} requests per minute exceeded; retry in ${retryAfter} s`,
    undefined,
    {
      ...rateLimitHeaders({ limit, remaining: 0, resetAt: resetAt(msBeforeNext) }),
      'Retry-After': String(retryAfter),
    },
  );
}

// Counting the requests that share a store call -----------------------------------------------------------------------

/** One request's place in its key's window: its own count, and when the window ends. */
export interface Counted {
  /** The points of the window up to and including this request's. */
  consumed: number;
  msBeforeNext: number;
}

/**
 * Counts the requests of one key that share a store call (coalesced) with one `consume(key, n)`
 * of the library, each request then taking its own count in arrival order: the same counts,
 * refusals and totals as one call each, since a refused request is counted too.
 */
export class CoalescedCounts {
  private readonly shared: (key: string) => Promise<Shared<Counted>>;

  constructor(limiter: RateLimiterAbstract) {
    this.shared = coalesced((key, requests) =>
      limiter.consume(key, requests).then(
        (counted): Counted => ({ consumed: counted.consumedPoints, msBeforeNext: counted.msBeforeNext }),
        (rejection: unknown): Counted => {
          // Past the limit the library rejects with the window as it stands: a count like any other.
          if (!(rejection instanceof RateLimiterRes)) throw rejection;
          return { consumed: rejection.consumedPoints, msBeforeNext: rejection.msBeforeNext };
        },
      ),
    );
  }

  async count(key: string): Promise<Counted> {
    const { result, index, size } = await this.shared(key);
    return { consumed: result.consumed - size + 1 + index, msBeforeNext: result.msBeforeNext };
  }
}
