import { ConnectionError, RateLimitedError, type RetryEvent } from '@convo/sdk';
import { describe, expect, it } from 'vitest';
import { rateLimitNotice } from './client.js';

const retry = (error: RetryEvent['error'], delayMs: number, attempt = 2): RetryEvent => ({
  error,
  attempt,
  maxAttempts: 3,
  delayMs,
  method: 'POST',
  path: '/v1/contacts',
});
const rateLimited = () => new RateLimitedError({ message: 'slow down', code: 'rate_limited', status: 429 });

describe('rateLimitNotice', () => {
  it('prints one line per wait on a 429, however many requests wait together, and none for other retries', () => {
    let time = 0;
    const lines: string[] = [];
    const notice = rateLimitNotice(
      (line) => lines.push(line),
      () => time,
    );
    notice(retry(rateLimited(), 2000));
    notice(retry(rateLimited(), 1900));
    time = 1000;
    notice(retry(new ConnectionError({ message: 'refused', code: 'connection_error' }), 400));
    time = 2000;
    notice(retry(rateLimited(), 12_345, 3));
    expect(lines).toEqual([
      'convo: rate limited; retrying in 2.0 s (attempt 2 of 3)',
      'convo: rate limited; retrying in 12.3 s (attempt 3 of 3)',
    ]);
  });
});
