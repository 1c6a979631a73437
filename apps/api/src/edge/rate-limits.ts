import { createRequire } from 'node:module';
import type { Redis as RedisClient } from 'ioredis';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { type CounterState, rateLimitsRepository } from '../repositories/rate-limits.js';
import type { DatabaseHandle } from '../db/database.js';
import { ApiError } from '../errors.js';

const WINDOW_SECONDS = 60;
export const WINDOW_MS = WINDOW_SECONDS * 1000;

/** What the client is told on every authenticated response. */
export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix seconds at which the window resets. */
  resetAt: number;
}

export const rateLimitHeaders = (state: RateLimitState): Record<string, string> => ({
  'X-RateLimit-Limit': String(state.limit),
  'X-RateLimit-Remaining': String(state.remaining),
  'X-RateLimit-Reset': String(state.resetAt),
});

export type RateLimitStoreKind = 'memory' | 'postgres' | 'redis';

/**
 * Requests per minute per account, across all its keys and every server process that shares the
 * store: Redis when REDIS_URL is set, else Postgres when the database is Postgres, else memory
 * (one SQLite process). When Redis fails, an in-memory limiter of the same size takes over for
 * this process (rate-limiter-flexible's insurance), so requests are still served.
 *
 * The Postgres store is a counter row per account in the unlogged `rate_limits` table, counted
 * in the same statement that authenticates the key (`countsWithAuthentication`): one round trip
 * per request for both. It needs no insurance: without Postgres no key can be checked either.
 */
export class RateLimits {
  private readonly limiters = new Map<number, RateLimiterAbstract>();
  /** Failed authentications per client address: a brute-force guard that never touches accounts. */
  private readonly authFailures: RateLimiterMemory;

  private constructor(
    readonly store: RateLimitStoreKind,
    private readonly create: (points: number) => RateLimiterAbstract,
    private readonly onClose: () => Promise<void>,
    authFailuresPerMinute: number,
    private readonly database?: DatabaseHandle,
  ) {
    this.authFailures = new RateLimiterMemory({ keyPrefix: 'auth-fail', points: authFailuresPerMinute, duration: WINDOW_SECONDS });
  }

  /** The request is counted by the authentication query itself (the Postgres store). */
  get countsWithAuthentication(): boolean {
    return this.store === 'postgres';
  }

  static create(input: { database: DatabaseHandle; redisUrl?: string | undefined; authFailuresPerMinute?: number }): RateLimits {
    const authFailures = input.authFailuresPerMinute ?? 30;
    const insurance = (points: number) => new RateLimiterMemory({ keyPrefix: `rpm${points}`, points, duration: WINDOW_SECONDS });
    if (input.redisUrl) {
      // Loaded only when configured: the client is a few MB of resident memory.
      const { Redis } = createRequire(import.meta.url)('ioredis') as { Redis: typeof RedisClient };
      // Fail fast while Redis is away instead of queueing commands: the insurance limiter answers.
      const redis = new Redis(input.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, commandTimeout: 500 });
      redis.on('error', () => {});
      return new RateLimits(
        'redis',
        (points) => new RateLimiterRedis({ storeClient: redis, keyPrefix: `convo:rpm${points}`, points, duration: WINDOW_SECONDS, insuranceLimiter: insurance(points) }),
        async () => {
          redis.disconnect();
        },
        authFailures,
      );
    }
    if (input.database.sharedAcrossProcesses) return new RateLimits('postgres', insurance, async () => {}, authFailures, input.database);
    return new RateLimits('memory', insurance, async () => {}, authFailures);
  }

  private limiterFor(points: number): RateLimiterAbstract {
    let limiter = this.limiters.get(points);
    if (!limiter) {
      limiter = this.create(points);
      this.limiters.set(points, limiter);
    }
    return limiter;
  }

  /** Counts one request of the account; throws 429 `rate_limited` (with headers) past the limit. */
  async consume(accountId: string, limit: number): Promise<RateLimitState> {
    if (this.store === 'postgres') {
      const nowMs = Date.now();
      return this.judge(limit, await rateLimitsRepository.count((this.database as DatabaseHandle).db, accountId, nowMs, WINDOW_MS), nowMs);
    }
    try {
      const res = await this.limiterFor(limit).consume(accountId);
      return { limit, remaining: res.remainingPoints, resetAt: Math.ceil((Date.now() + res.msBeforeNext) / 1000) };
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      throw rateLimited(limit, rejection.msBeforeNext);
    }
  }

  /** The verdict on a request already counted (`points` so far in the window ending at `expire`). */
  judge(limit: number, counted: CounterState, nowMs: number): RateLimitState {
    const msBeforeNext = Math.max(0, counted.expire - nowMs);
    if (counted.points > limit) throw rateLimited(limit, msBeforeNext);
    return { limit, remaining: limit - counted.points, resetAt: Math.ceil((nowMs + msBeforeNext) / 1000) };
  }

  /** Records a failed authentication from `address`; throws 429 once the address has failed too often. */
  async authenticationFailed(address: string): Promise<void> {
    try {
      await this.authFailures.consume(address);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      throw new ApiError('rate_limited', `Too many failed authentications from this address; retry in ${retryAfter} s`, undefined, {
        'Retry-After': String(retryAfter),
      });
    }
  }

  close(): Promise<void> {
    return this.onClose();
  }
}

/** 429 `rate_limited` with the rate-limit headers and Retry-After. */
function rateLimited(limit: number, msBeforeNext: number): ApiError {
  const retryAfter = Math.max(1, Math.ceil(msBeforeNext / 1000));
  const state = { limit, remaining: 0, resetAt: Math.ceil((Date.now() + msBeforeNext) / 1000) };
  return new ApiError('rate_limited', `Rate limit of ${limit} requests per minute exceeded; retry in ${retryAfter} s`, undefined, {
    ...rateLimitHeaders(state),
    'Retry-After': String(retryAfter),
  });
}
