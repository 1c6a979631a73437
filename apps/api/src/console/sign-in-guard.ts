import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiError } from '../errors.js';

/** Failed sign-ins allowed per e-mail address, and per client address, in a window. */
export interface SignInGuardOptions {
  perEmail?: number;
  perAddress?: number;
  windowSeconds?: number;
}

/**
 * The brute-force guard of sign-in (CONTRACT: Console and people): failures are counted per
 * e-mail address (one account guessed from many addresses) and per client address (many accounts
 * guessed from one). Past either limit every sign-in of that e-mail or address is 429 until the
 * window ends, a right password included; a success clears the e-mail's count. Counted in this
 * process's memory, like the API's failed-key guard.
 */
export class SignInGuard {
  private readonly byEmail: RateLimiterMemory;
  private readonly byAddress: RateLimiterMemory;

  constructor(options: SignInGuardOptions = {}) {
    const duration = options.windowSeconds ?? 15 * 60;
    this.byEmail = new RateLimiterMemory({ keyPrefix: 'sign-in-email', points: options.perEmail ?? 10, duration });
    this.byAddress = new RateLimiterMemory({ keyPrefix: 'sign-in-address', points: options.perAddress ?? 50, duration });
  }

  /** 429 when the e-mail or the address has used up its failures. */
  async check(email: string, address: string): Promise<void> {
    const [emailWindow, addressWindow] = await Promise.all([this.byEmail.get(email), this.byAddress.get(address)]);
    const blocked: RateLimiterRes[] = [];
    if (emailWindow && emailWindow.consumedPoints >= this.byEmail.points) blocked.push(emailWindow);
    if (addressWindow && addressWindow.consumedPoints >= this.byAddress.points) blocked.push(addressWindow);
    if (blocked.length === 0) return;
    const retryAfter = Math.max(1, Math.ceil(Math.max(...blocked.map((window) => window.msBeforeNext)) / 1000));
    throw new ApiError('rate_limited', `Too many failed sign-ins; try again in ${retryAfter} s`, undefined, { 'Retry-After': String(retryAfter) });
  }

  async failed(email: string, address: string): Promise<void> {
    // A rejection only says the limit is reached, which check() reports on the next attempt.
    const count = (limiter: RateLimiterMemory, key: string) =>
      limiter.consume(key).catch((rejection) => {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
      });
    await Promise.all([count(this.byEmail, email), count(this.byAddress, address)]);
  }

  async succeeded(email: string): Promise<void> {
    await this.byEmail.delete(email);
  }
}
