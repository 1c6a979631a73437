import { afterEach, describe, expect, it, vi } from 'vitest';
import { nextTryAt } from './retry-schedule.js';

describe('nextTryAt', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('waits the schedule’s next step within ±10 %, then gives up', () => {
    vi.useFakeTimers({ now: new Date('2026-11-29T12:00:00.000Z') });
    const schedule = [1_000, 60_000];
    for (let i = 0; i < 200; i++) {
      const first = Date.parse(nextTryAt(schedule, 0) as string) - Date.now();
      const second = Date.parse(nextTryAt(schedule, 1) as string) - Date.now();
      expect(first).toBeGreaterThanOrEqual(900);
      expect(first).toBeLessThanOrEqual(1_100);
      expect(second).toBeGreaterThanOrEqual(54_000);
      expect(second).toBeLessThanOrEqual(66_000);
    }
    expect(nextTryAt(schedule, 2)).toBeUndefined();
    expect(nextTryAt([], 0)).toBeUndefined();
  });
});
