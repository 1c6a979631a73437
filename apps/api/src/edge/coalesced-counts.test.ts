import { RateLimiterMemory } from 'rate-limiter-flexible';
import { describe, expect, it, vi } from 'vitest';
import { CoalescedCounts } from './rate-limits.js';

/** A limiter whose store answers each call on a later turn of the event loop, as a database does. */
function slowLimiter(points: number) {
  const limiter = new RateLimiterMemory({ points, duration: 60 });
  const consume = limiter.consume.bind(limiter);
  const calls: number[] = [];
  vi.spyOn(limiter, 'consume').mockImplementation(async (key, n = 1) => {
    calls.push(Number(n));
    await new Promise((resolve) => setImmediate(resolve));
    return consume(key, n);
  });
  return { limiter, calls };
}

describe('coalesced counts', () => {
  it('count the requests arriving during a call in the next call, each with its own count, in order', async () => {
    const { limiter, calls } = slowLimiter(100);
    const counts = new CoalescedCounts(limiter);
    const counted = await Promise.all(Array.from({ length: 10 }, () => counts.count('acct')));
    expect(counted.map((c) => c.consumed)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(calls).toEqual([1, 9]);
    expect((await counts.count('acct')).consumed).toBe(11);
    expect(calls).toEqual([1, 9, 1]);
  });

  it('give the requests of a call that crosses the limit their counts past it, as separate calls would', async () => {
    const { limiter } = slowLimiter(5);
    const counts = new CoalescedCounts(limiter);
    const counted = await Promise.all(Array.from({ length: 8 }, () => counts.count('acct')));
    expect(counted.map((c) => c.consumed)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    for (const { msBeforeNext } of counted) expect(msBeforeNext).toBeGreaterThan(0);
    expect((await limiter.get('acct'))?.consumedPoints).toBe(8);
  });

  it('keep keys apart, and fail every request of a call the store fails', async () => {
    const { limiter } = slowLimiter(100);
    const counts = new CoalescedCounts(limiter);
    const [a, b] = await Promise.all([counts.count('a'), counts.count('b')]);
    expect([a.consumed, b.consumed]).toEqual([1, 1]);
    vi.mocked(limiter.consume).mockRejectedValueOnce(new Error('store down'));
    const failed = await Promise.allSettled([counts.count('a'), counts.count('a')]);
    expect(failed[0]).toMatchObject({ status: 'rejected', reason: new Error('store down') });
    expect((await counts.count('a')).consumed).toBeGreaterThan(1);
  });
});
