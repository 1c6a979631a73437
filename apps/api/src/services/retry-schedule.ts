/** Retry waits vary by ±10 % so that the failures of one outage do not all come back at once. */
const JITTER = 0.1;

/**
 * When to try again after `failedTries` failed tries, by `scheduleMs` (the wait before each retry, from the
 * settings), jittered; undefined once the schedule has run out.
 */
export function nextTryAt(scheduleMs: readonly number[], failedTries: number): string | undefined {
  const waitMs = scheduleMs[failedTries];
  if (waitMs === undefined) return undefined;
  return new Date(Date.now() + waitMs * (1 - JITTER + Math.random() * 2 * JITTER)).toISOString();
}
