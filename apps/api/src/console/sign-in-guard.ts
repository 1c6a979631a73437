import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiError } from '../errors.js';

/** Failed sign-ins allowed in a window, by what they are counted against. */
export interface SignInGuardOptions {
  /** Per e-mail address and client address together: one person's mistypes, or one stranger's guesses. */
  perEmailAndAddress?: number;
  /** Per client address across e-mail addresses: one address guessing many accounts. */
  perAddress?: number;
  /** Per e-mail address from every client address: past it, the e-mail is under attack. */
  perEmail?: number;
  /** What perEmailAndAddress becomes while the e-mail is under attack. */
  perEmailAndAddressUnderAttack?: number;
  windowSeconds?: number;
}

/**
 * Sign-in's brute-force guard, as OWASP advises: failures count per (e-mail, address) pair, so a stranger's
 * guesses never lock out the owner signing in from elsewhere, and per address across e-mails. Past either
 * limit, sign-ins are 429 until the window ends, a right password included.
 *
 * An e-mail guessed from many addresses is slowed, not locked: past `perEmail` failures, each pair gets
 * `perEmailAndAddressUnderAttack`, but an address that has not failed for that e-mail can always try.
 * A success clears its own pair only. Counted in this process's memory.
 */
export class SignInGuard {
  private readonly byPair: RateLimiterMemory;
  private readonly byAddress: RateLimiterMemory;
  private readonly byEmail: RateLimiterMemory;
  private readonly perPairUnderAttack: number;

  constructor(options: SignInGuardOptions = {}) {
    const duration = options.windowSeconds ?? 15 * 60;
    this.byPair = new RateLimiterMemory({
      keyPrefix: 'sign-in-pair',
      points: options.perEmailAndAddress ?? 10,
      duration,
    });
    this.byAddress = new RateLimiterMemory({
      keyPrefix: 'sign-in-address',
      points: options.perAddress ?? 50,
      duration,
    });
    this.byEmail = new RateLimiterMemory({ keyPrefix: 'sign-in-email', points: options.perEmail ?? 100, duration });
    this.perPairUnderAttack = options.perEmailAndAddressUnderAttack ?? 3;
  }

  /** 429 when this e-mail from this address, or this address, has used up its failures. */
  async check(email: string, address: string): Promise<void> {
    const [pairWindow, addressWindow, emailWindow] = await Promise.all([
      this.byPair.get(pairKey(email, address)),
      this.byAddress.get(address),
      this.byEmail.get(email),
    ]);
    const underAttack = emailWindow !== null && emailWindow.consumedPoints >= this.byEmail.points;
    const pairLimit = underAttack ? Math.min(this.perPairUnderAttack, this.byPair.points) : this.byPair.points;
    const blocked: RateLimiterRes[] = [];
    if (pairWindow && pairWindow.consumedPoints >= pairLimit) blocked.push(pairWindow);
    if (addressWindow && addressWindow.consumedPoints >= this.byAddress.points) blocked.push(addressWindow);
    if (blocked.length === 0) return;
    const retryAfter = Math.max(1, Math.ceil(Math.max(...blocked.map((window) => window.msBeforeNext)) / 1000));
    throw new ApiError('rate_limited', `Too many failed sign-ins; try again in ${retryAfter} s`, undefined, {
      'Retry-After': String(retryAfter),
    });
  }

  async failed(email: string, address: string): Promise<void> {
    // A rejection only says the limit is reached, which check() reports on the next attempt.
    const count = (limiter: RateLimiterMemory, key: string) =>
      limiter.consume(key).catch((rejection) => {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
      });
    await Promise.all([
      count(this.byPair, pairKey(email, address)),
      count(this.byAddress, address),
      count(this.byEmail, email),
    ]);
  }

  async succeeded(email: string, address: string): Promise<void> {
    await this.byPair.delete(pairKey(email, address));
  }
}

/** Unambiguous whatever either part contains. */
const pairKey = (email: string, address: string): string => JSON.stringify([email, address]);
