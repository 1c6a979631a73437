import { ContactList } from '@convo/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountsService } from '../services/accounts.js';
import {
  ACTIVE_DIALECTS,
  type TestServer,
  expectBody,
  expectError,
  startTestServer,
  testSettings,
} from '../testing/harness.js';

for (const dialect of ACTIVE_DIALECTS) {
  describe(`rate limits [${dialect}]`, () => {
    let server: TestServer;
    let free: string;
    let freeReadOnly: string;
    let growth: string;
    beforeAll(async () => {
      server = await startTestServer(dialect, testSettings({ authFailuresPerMinute: 5 }));
      const account = await accountsService.createAccount(
        { database: server.database },
        { name: 'Free', plan: 'free' },
      );
      free = (
        await accountsService.createKey({ database: server.database }, { accountId: account.id, type: 'full_access' })
      ).key;
      freeReadOnly = (
        await accountsService.createKey({ database: server.database }, { accountId: account.id, type: 'read_only' })
      ).key;
      const other = await accountsService.createAccount(
        { database: server.database },
        { name: 'Growth', plan: 'growth' },
      );
      growth = (
        await accountsService.createKey({ database: server.database }, { accountId: other.id, type: 'full_access' })
      ).key;
    });
    afterAll(() => server.close());

    it('reports the limit on every authenticated response and enforces it per account, across keys', async () => {
      const first = await server.request('GET', '/contacts', { key: free });
      expectBody(first, 200, ContactList);
      expect(first.headers.get('x-ratelimit-limit')).toBe('60');
      expect(first.headers.get('x-ratelimit-remaining')).toBe('59');
      const reset = Number(first.headers.get('x-ratelimit-reset'));
      const nowSeconds = Date.now() / 1000;
      expect(reset).toBeGreaterThan(nowSeconds);
      expect(reset).toBeLessThanOrEqual(Math.ceil(nowSeconds) + 61);

      // Errors after authentication count and carry the headers too.
      const notFound = await server.request('GET', '/contacts/ct_missing', { key: free });
      expect(notFound.status).toBe(404);
      expect(notFound.headers.get('x-ratelimit-remaining')).toBe('58');
      const unknownPath = await server.request('GET', '/nope', { key: freeReadOnly });
      expect(unknownPath.status).toBe(404);
      expect(unknownPath.headers.get('x-ratelimit-remaining')).toBe('57');

      // Failed authentication never counts against the account.
      await server.request('GET', '/contacts', { key: 'convo_sk_wrong' });

      const statuses: number[] = [];
      for (let i = 0; i < 57; i++)
        statuses.push((await server.request('GET', '/contacts', { key: i % 2 ? free : freeReadOnly })).status);
      expect(statuses.every((s) => s === 200)).toBe(true);

      const limited = await server.request('GET', '/contacts', { key: free });
      const body = expectError(limited, 429, 'rate_limited');
      expect(body.error.message).toMatch(/60 requests per minute/);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
      // The rate limit comes before permission: a read-only key writing is 429, not 403.
      expectError(await server.request('POST', '/contacts', { key: freeReadOnly, body: {} }), 429, 'rate_limited');

      // Another account's quota is untouched.
      const other = await server.request('GET', '/contacts', { key: growth });
      expect(other.status).toBe(200);
      expect(other.headers.get('x-ratelimit-limit')).toBe('300');
    });

    it('limits failed authentication per client address, without blocking valid keys', async () => {
      // The guard allows 5 failures a minute here; the test above spent one.
      for (let i = 0; i < 4; i++)
        expectError(await server.request('GET', '/tags', { key: `convo_sk_guess${i}` }), 401, 'unauthorized');
      const blocked = await server.request('GET', '/tags', { key: 'convo_sk_guess-more' });
      expectError(blocked, 429, 'rate_limited');
      expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(blocked.headers.get('x-ratelimit-limit')).toBeNull();
      expect((await server.request('GET', '/tags', { key: growth })).status).toBe(200);
    });

    it('counts an account with much of its minute left exactly per request, and refuses a revoked key at once', async () => {
      const account = await accountsService.createAccount(
        { database: server.database },
        {
          name: 'Busy',
          plan: 'enterprise',
          rateLimitRpm: 1_000_000,
        },
      );
      const busy = await accountsService.createKey(
        { database: server.database },
        { accountId: account.id, type: 'full_access' },
      );
      const remaining: number[] = [];
      for (let i = 0; i < 150; i++) {
        const response = await server.request('GET', '/tags', { key: busy.key });
        expect(response.status).toBe(200);
        remaining.push(Number(response.headers.get('x-ratelimit-remaining')));
      }
      // One number per request, in order, whichever store counts them.
      expect(remaining).toEqual(Array.from({ length: 150 }, (_, i) => 1_000_000 - 1 - i));
      await accountsService.revokeKey({ database: server.database }, busy.id);
      // Refused as unknown (the address guard, spent by the test above, may answer first): no account headers.
      const refused = await server.request('GET', '/tags', { key: busy.key });
      expect([401, 429]).toContain(refused.status);
      expect(refused.headers.get('x-ratelimit-limit')).toBeNull();
    });

    it('refuses a webhook key before counting it: 403 with the headers, and nothing spent', async () => {
      const account = await accountsService.createAccount(
        { database: server.database },
        {
          name: 'Signing secret misused',
          plan: 'free',
        },
      );
      const signing = (
        await accountsService.createKey({ database: server.database }, { accountId: account.id, type: 'webhook' })
      ).key;
      const api = (
        await accountsService.createKey({ database: server.database }, { accountId: account.id, type: 'full_access' })
      ).key;
      for (let i = 0; i < 3; i++) {
        const refused = await server.request('GET', '/contacts', { key: signing });
        expectError(refused, 403, 'forbidden');
        expect(refused.headers.get('x-ratelimit-limit')).toBe('60');
        expect(refused.headers.get('x-ratelimit-remaining')).toBe('60');
      }
      expect((await server.request('GET', '/contacts', { key: api })).headers.get('x-ratelimit-remaining')).toBe('59');
      expect((await server.request('GET', '/contacts', { key: signing })).headers.get('x-ratelimit-remaining')).toBe(
        '59',
      );
    });
  });
}
