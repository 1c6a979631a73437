import { expect, it } from 'vitest';
import { describeEachDialect, testSettings } from '../testing/harness.js';

// The failed-key guard counts per client address (CONTRACT: Rate limits); behind a balancer that
// address is the client's only when the balancer is trusted to name it in X-Forwarded-For.
const FAILURES = 3;
const badKey = (server: Parameters<Parameters<typeof describeEachDialect>[1]>[0], client: string) =>
  server().request('GET', '/contacts', { key: 'convo_sk_wrong', headers: { 'X-Forwarded-For': client } });

describeEachDialect(
  'behind a trusted balancer (CONVO_TRUSTED_PROXIES)',
  (server) => {
    it('limits failed keys per client that X-Forwarded-For names, not per balancer', async () => {
      for (let i = 0; i < FAILURES; i++) expect((await badKey(server, '203.0.113.5')).status).toBe(401);
      const limited = await badKey(server, '203.0.113.5');
      expect(limited.status).toBe(429);
      expect(limited.body.error.code).toBe('rate_limited');
      // Another client behind the same balancer is not held back by the first one's failures.
      expect((await badKey(server, '203.0.113.6')).status).toBe(401);
    });
  },
  testSettings({ authFailuresPerMinute: FAILURES, trustedProxies: 'loopback' }),
);

describeEachDialect(
  'with no trusted balancer (the default)',
  (server) => {
    it('ignores X-Forwarded-For: a client cannot name itself another address', async () => {
      for (let i = 0; i < FAILURES; i++) expect((await badKey(server, `198.51.100.${i}`)).status).toBe(401);
      expect((await badKey(server, '198.51.100.99')).status).toBe(429);
    });
  },
  testSettings({ authFailuresPerMinute: FAILURES }),
);
