import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';

/** One request's place in its key's window: its own count, and when the window ends. */
export interface Counted {
  /** The points of the window up to and including this request's. */
  consumed: number;
  msBeforeNext: number;
}

interface Waiting {
  resolve: (counted: Counted) => void;
  reject: (error: unknown) => void;
}

/**
 * Counts the requests of one key that arrive while the store is counting an earlier one in one
 * call for all of them (the library's `consume(key, points)`), each request then taking its own
 * count in arrival order: the same counts, refusals and totals as one call each, since a refused
 * request is counted too. It exists for the benchmark's target of 0.7 times the expert floor on
 * Postgres (bench/README.md, Targets), which one store round trip per request misses. A request
 * never joins a call already sent, so its count is never older than its arrival.
 */
export class CoalescedCounts {
  /** Per key whose call is in flight, the requests that came since, for the next call. */
  private readonly next = new Map<string, Waiting[]>();

  constructor(private readonly limiter: RateLimiterAbstract) {}

  count(key: string): Promise<Counted> {
    return new Promise((resolve, reject) => {
      const queued = this.next.get(key);
      if (queued) queued.push({ resolve, reject });
      else this.send(key, [{ resolve, reject }]);
    });
  }

  private send(key: string, batch: Waiting[]): void {
    this.next.set(key, []);
    const settle = (consumed: number, msBeforeNext: number) => {
      const first = consumed - batch.length + 1;
      for (const [i, waiting] of batch.entries()) waiting.resolve({ consumed: first + i, msBeforeNext });
    };
    this.limiter
      .consume(key, batch.length)
      .then(
        (counted) => settle(counted.consumedPoints, counted.msBeforeNext),
        (rejection: unknown) => {
          if (rejection instanceof RateLimiterRes) settle(rejection.consumedPoints, rejection.msBeforeNext);
          else for (const waiting of batch) waiting.reject(rejection);
        },
      )
      .finally(() => {
        const queued = this.next.get(key) ?? [];
        if (queued.length > 0) this.send(key, queued);
        else this.next.delete(key);
      });
  }
}
