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

/** Sets the rate-limit headers on a response (every authenticated request does, one call per header). */
export function setRateLimitHeaders(target: { setHeader(name: string, value: string): void }, state: RateLimitState): void {
  target.setHeader('X-RateLimit-Limit', String(state.limit));
  target.setHeader('X-RateLimit-Remaining', String(state.remaining));
  target.setHeader('X-RateLimit-Reset', String(state.resetAt));
}

/** The rate-limit headers as an object (an error's headers). */
export const rateLimitHeaders = (state: RateLimitState): Record<string, string> => {
  const headers: Record<string, string> = {};
  setRateLimitHeaders({ setHeader: (name, value) => (headers[name] = value) }, state);
  return headers;
};

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
 * While an account has much of its minute left, a process counts a block of its next requests at
 * once (CounterBlocks): the counter row, which every request of the account would otherwise lock
 * in turn, is written once per block. The next block is counted in the background when half of
 * the one in use is spent (take), so no request waits for a count while its account has plenty
 * left: counting in the request held one request in every block (1 %) for a second round trip,
 * twice the wait of the others, which was the benchmark's p99 (bench/README.md, eleventh pass).
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

  /** Blocks of counted requests this process holds (the Postgres store). */
  readonly blocks = new CounterBlocks();

  /** The background count of each account's next block, while it runs (take). */
  private readonly refills = new Map<string, Promise<void>>();

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
      const held = this.take(accountId, limit, nowMs);
      if (held) return held;
      const points = this.blocks.sizeFor(accountId);
      const counted = await rateLimitsRepository.count((this.database as DatabaseHandle).db, accountId, nowMs, WINDOW_MS, points);
      return this.admitCounted(accountId, limit, counted, points, nowMs);
    }
    try {
      const res = await this.limiterFor(limit).consume(accountId);
      return { limit, remaining: res.remainingPoints, resetAt: Math.ceil((Date.now() + res.msBeforeNext) / 1000) };
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      throw rateLimited(limit, rejection.msBeforeNext);
    }
  }

  /**
   * The next number of the account's blocks as the request's verdict (undefined without one: the
   * request must be counted), and the count of the account's next block started in the background
   * when this one runs low (CounterBlocks.runningLow), one at a time per account. A count that
   * fails is dropped: the first request that finds no block counts itself, as without a refill.
   */
  take(accountId: string, limit: number, nowMs: number): RateLimitState | undefined {
    const state = this.blocks.take(accountId, limit, nowMs);
    if (state && this.blocks.runningLow(accountId, nowMs) && !this.refills.has(accountId)) this.refill(accountId, limit);
    return state;
  }

  private refill(accountId: string, limit: number): void {
    const points = this.blocks.sizeFor(accountId);
    const counting = rateLimitsRepository
      .count((this.database as DatabaseHandle).db, accountId, Date.now(), WINDOW_MS, points)
      .then(
        (counted) => this.blocks.keep(accountId, limit, countedBlock(counted, points, limit)),
        () => {},
      )
      .finally(() => this.refills.delete(accountId));
    this.refills.set(accountId, counting);
  }

  /** The verdict on a request already counted (`points` so far in the window ending at `expire`). */
  judge(limit: number, counted: CounterState, nowMs: number): RateLimitState {
    const msBeforeNext = Math.max(0, counted.expire - nowMs);
    if (counted.points > limit) throw rateLimited(limit, msBeforeNext);
    return { limit, remaining: limit - counted.points, resetAt: Math.ceil((nowMs + msBeforeNext) / 1000) };
  }

  /**
   * The verdict on a request counted with `points - 1` more (a block): the request is the first
   * of them, and the process keeps the rest for the account's next requests.
   */
  admitCounted(accountId: string, limit: number, counted: CounterState, points: number, nowMs: number): RateLimitState {
    const block = countedBlock(counted, points, limit);
    const first = block.next++;
    this.blocks.keep(accountId, limit, block);
    return this.judge(limit, { points: first, expire: counted.expire }, nowMs);
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

  /** Resolves when the background counts under way (take) have ended, landed or dropped. */
  async counted(): Promise<void> {
    await Promise.all(this.refills.values());
  }

  /** Stops: waits for the background counts still running, then closes the store. */
  async close(): Promise<void> {
    await this.counted();
    await this.onClose();
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

/** Requests numbered `next` … `last` of an account's window ending at `expire`, not yet used. */
interface CounterBlock {
  next: number;
  last: number;
  expire: number;
}

/** The numbers of a count of `points` requests that brought the window to `counted.points`, those within the limit. */
const countedBlock = (counted: CounterState, points: number, limit: number): CounterBlock => ({
  next: counted.points - points + 1,
  last: Math.min(counted.points, limit),
  expire: counted.expire,
});

/** A block never takes more than this share of what the account has left in its minute… */
const BLOCK_SHARE = 64;
/** …nor more than this many requests. */
const MAX_BLOCK = 100;

/**
 * Blocks of requests counted in advance on the shared Postgres counter, one process's own.
 * Counted requests are numbered in their window; a block is a run of numbers that this process
 * alone hands out, so every admitted request has its own number whichever process served it,
 * the limit is never exceeded, and X-RateLimit-Remaining never repeats. A block takes at most
 * 1/64 of what the account had left at its last count, so near the limit (under 128 left) every
 * request is counted one by one, as exactly as without blocks; what a block leaves unused when
 * its window ends is not handed out. A revoked key is refused at once: the key is looked up on
 * every request all the same.
 */
export class CounterBlocks {
  private readonly byAccount = new Map<string, { blocks: CounterBlock[]; left: number }>();
  /** The account of each key hash seen, so a request can use a block before its key is looked up. */
  private readonly accountOfKey = new Map<string, string>();

  /** Whether the account holds a block with requests left in a window not yet over. */
  holds(accountId: string, nowMs: number): boolean {
    return this.usable(accountId, nowMs) !== undefined;
  }

  /** The account of a key hash seen before. */
  accountOf(keyHash: string): string | undefined {
    return this.accountOfKey.get(keyHash);
  }

  /** Remembers the account of a key (bounded: the oldest entry goes first). */
  noteKey(keyHash: string, accountId: string): void {
    if (this.accountOfKey.get(keyHash) === accountId) return;
    if (this.accountOfKey.size >= 10_000) this.accountOfKey.delete(this.accountOfKey.keys().next().value as string);
    this.accountOfKey.set(keyHash, accountId);
  }

  /** The next number of the account's blocks as the request's verdict, or undefined without one. */
  take(accountId: string, limit: number, nowMs: number): RateLimitState | undefined {
    const block = this.usable(accountId, nowMs);
    if (!block) return undefined;
    if (block.next > limit) {
      // The account's limit was lowered under what its blocks hold: they are void, and the
      // request is counted (and refused) on the shared counter.
      this.byAccount.delete(accountId);
      return undefined;
    }
    const number = block.next++;
    (this.byAccount.get(accountId) as { left: number }).left = limit - number;
    return { limit, remaining: limit - number, resetAt: Math.ceil(block.expire / 1000) };
  }

  /**
   * Whether the account's next block should be counted now: blocks are counted in advance (more
   * than one request at a time) and what its usable blocks have left is at most half a block.
   */
  runningLow(accountId: string, nowMs: number): boolean {
    const size = this.sizeFor(accountId);
    if (size <= 1) return false;
    let held = 0;
    for (const block of this.byAccount.get(accountId)?.blocks ?? []) if (block.expire > nowMs) held += Math.max(0, block.last - block.next + 1);
    return held * 2 <= size;
  }

  /** How many requests to count at the account's next count: 1 unless it had plenty left. */
  sizeFor(accountId: string | undefined): number {
    const left = accountId === undefined ? undefined : this.byAccount.get(accountId)?.left;
    return left === undefined ? 1 : Math.max(1, Math.min(MAX_BLOCK, Math.floor(left / BLOCK_SHARE)));
  }

  /**
   * Keeps the rest of a counted block among those the account holds, in the order of their
   * numbers (two counts of one process can return in either order: a background one and a
   * request's own), so its requests get decreasing X-RateLimit-Remaining.
   */
  keep(accountId: string, limit: number, block: CounterBlock): void {
    let entry = this.byAccount.get(accountId);
    if (!entry) {
      if (this.byAccount.size >= 10_000) this.byAccount.delete(this.byAccount.keys().next().value as string);
      entry = { blocks: [], left: limit };
      this.byAccount.set(accountId, entry);
    }
    entry.left = Math.max(0, limit - (block.next - 1));
    if (block.next > block.last) return;
    const after = entry.blocks.findIndex((held) => held.next > block.next);
    if (after === -1) entry.blocks.push(block);
    else entry.blocks.splice(after, 0, block);
  }

  /** The account's first block with requests left in a window not yet over (spent ones are dropped). */
  private usable(accountId: string, nowMs: number): CounterBlock | undefined {
    const blocks = this.byAccount.get(accountId)?.blocks;
    if (!blocks) return undefined;
    while (blocks.length > 0) {
      const block = blocks[0] as CounterBlock;
      if (block.next <= block.last && block.expire > nowMs) return block;
      blocks.shift();
    }
    return undefined;
  }
}
