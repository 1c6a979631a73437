import { describe, expect, it } from 'vitest';
import { coalesced } from './coalesced-calls.js';

/** The store answers on a later turn of the event loop, as a database does. */
const pause = () => new Promise((resolve) => setImmediate(resolve));

describe('coalesced calls', () => {
  it('give the requests that arrive during a call the next call, never the one already sent', async () => {
    let state = 'active';
    const calls: number[] = [];
    const lookUp = coalesced(async (_key, requests) => {
      calls.push(requests);
      const read = state;
      await pause();
      return read;
    });
    const first = lookUp('key');
    // Revoked after the first call read the key: every later request must see it.
    state = 'revoked';
    const later = [lookUp('key'), lookUp('key'), lookUp('key')];
    expect((await first).result).toBe('active');
    const answers = await Promise.all(later);
    expect(answers.map((a) => a.result)).toEqual(['revoked', 'revoked', 'revoked']);
    expect(answers.map((a) => [a.index, a.size])).toEqual([
      [0, 3],
      [1, 3],
      [2, 3],
    ]);
    expect(calls).toEqual([1, 3]);
  });

  it('fail every request of a failed call, and call again for the next ones', async () => {
    let fail = true;
    const lookUp = coalesced(async (key) => {
      await pause();
      if (fail) throw new Error(`${key} unreachable`);
      return key;
    });
    const failed = await Promise.allSettled([lookUp('a'), lookUp('a')]);
    expect(failed.map((f) => f.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect((await lookUp('a')).result).toBe('a');
  });
});
