import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { type Shared, coalesced } from './coalesced-calls.js';

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
