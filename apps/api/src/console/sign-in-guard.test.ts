import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors.js';
import { SignInGuard } from './sign-in-guard.js';

/** The guard's answer to a sign-in: allowed, or 429 with its Retry-After. */
async function verdict(guard: SignInGuard, email: string, address: string): Promise<'allowed' | number> {
  try {
    await guard.check(email, address);
    return 'allowed';
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'rate_limited') throw error;
    return Number(error.headers['Retry-After']);
  }
}

async function fail(guard: SignInGuard, email: string, address: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) await guard.failed(email, address);
}

describe('the sign-in guard', () => {
  it('locks an e-mail out from one address only, and a success clears only its own pair', async () => {
    const guard = new SignInGuard({ perEmailAndAddress: 3, windowSeconds: 60 });
    await fail(guard, 'owner@example.com', '10.0.0.1', 2);
    expect(await verdict(guard, 'owner@example.com', '10.0.0.1')).toBe('allowed');
    await fail(guard, 'owner@example.com', '10.0.0.1', 1);
    const retryAfter = await verdict(guard, 'owner@example.com', '10.0.0.1');
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await verdict(guard, 'owner@example.com', '10.0.0.2')).toBe('allowed');
    expect(await verdict(guard, 'other@example.com', '10.0.0.1')).toBe('allowed');

    await fail(guard, 'owner@example.com', '10.0.0.2', 2);
    await guard.succeeded('owner@example.com', '10.0.0.2');
    await fail(guard, 'owner@example.com', '10.0.0.2', 2);
    expect(await verdict(guard, 'owner@example.com', '10.0.0.2')).toBe('allowed');
    expect(await verdict(guard, 'owner@example.com', '10.0.0.1')).toBeTypeOf('number');
  });

  it('limits one address across e-mail addresses', async () => {
    const guard = new SignInGuard({ perEmailAndAddress: 3, perAddress: 5, windowSeconds: 60 });
    for (let i = 0; i < 5; i++) await guard.failed(`person${i}@example.com`, '10.0.0.9');
    expect(await verdict(guard, 'fresh@example.com', '10.0.0.9')).toBeTypeOf('number');
    expect(await verdict(guard, 'fresh@example.com', '10.0.0.10')).toBe('allowed');
  });

  it('slows guessing of one e-mail from many addresses without locking out an address that has not failed', async () => {
    const guard = new SignInGuard({
      perEmailAndAddress: 5,
      perEmail: 8,
      perEmailAndAddressUnderAttack: 1,
      windowSeconds: 60,
    });
    // Three addresses, two failures each: none at its own limit, the e-mail not yet at its own.
    for (let i = 1; i <= 3; i++) await fail(guard, 'owner@example.com', `10.0.1.${i}`, 2);
    expect(await verdict(guard, 'owner@example.com', '10.0.1.1')).toBe('allowed');
    // A fourth address's two failures bring the e-mail to its limit.
    await fail(guard, 'owner@example.com', '10.0.1.4', 2);
    // Under attack, each address has one failure: those that failed wait, a fresh one may try.
    for (let i = 1; i <= 4; i++)
      expect(await verdict(guard, 'owner@example.com', `10.0.1.${i}`), `10.0.1.${i}`).toBeTypeOf('number');
    expect(await verdict(guard, 'owner@example.com', '10.0.1.5')).toBe('allowed');
    await guard.failed('owner@example.com', '10.0.1.5');
    expect(await verdict(guard, 'owner@example.com', '10.0.1.5')).toBeTypeOf('number');
    expect(await verdict(guard, 'owner@example.com', '10.0.1.6')).toBe('allowed');
    // Other e-mails from those addresses are not affected.
    expect(await verdict(guard, 'other@example.com', '10.0.1.1')).toBe('allowed');
  });
});
