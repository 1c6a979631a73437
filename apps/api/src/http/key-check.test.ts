import { ContactList, ConversationList } from '@convo/core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { RateLimits } from '../edge/rate-limits.js';
import { apiKeysRepository } from '../repositories/accounts.js';
import { accountsService } from '../services/accounts.js';
import { type TestDatabase, createTestDatabase } from '../testing/databases.js';
import { ACTIVE_DIALECTS, type TestResponse, describeEachDialect, expectBody, expectError, revokeKeyElsewhere, testSettings } from '../testing/harness.js';
import { buildServer } from './server.js';

/**
 * The hot reads check their key inside their own statements once a process has seen the key
 * (repositories/key-check.ts, on Postgres): a key revoked by another process must still fail on
 * the very next request, whatever the operation would have answered, and a request whose reads
 * confirm the key must not look it up again. On SQLite the same requests go through the
 * principal cache (services/principal-cache.ts): the behaviour asked here is the same.
 */
describeEachDialect('the key checked by the reads', (server) => {
  let conversationId: string;

  beforeAll(async () => {
    const contact = await server().request('POST', '/contacts', { body: { name: 'Martina Keycheck', phone: '+14155550188' } });
    expect(contact.status, contact.text).toBe(201);
    const conversation = await server().request('POST', '/conversations', { body: { contact_id: contact.body.id, platform: 'whatsapp' } });
    expect(conversation.status, conversation.text).toBe(201);
    conversationId = conversation.body.id as string;
    const tagged = await server().request('POST', `/contacts/${contact.body.id as string}/tags`, { body: { tag: 'vip' } });
    expect(tagged.status, tagged.text).toBeLessThan(300);
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** A new key of the test account, used `times` times on `path` (so that the server has seen it). */
  async function keyInUse(path: string, type: 'full_access' | 'read_only' | 'webhook' = 'full_access', times = 3) {
    const created = await accountsService.createKey(server().database, { accountId: server().accountId, type });
    for (let i = 0; i < times; i++) await server().request('GET', path, { key: created.key });
    return created;
  }

  /** 401, with nothing of the account in it: no rate-limit headers. */
  function expectRefused(response: TestResponse): void {
    expectError(response, 401, 'unauthorized');
    for (const header of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) expect(response.headers.get(header), header).toBeNull();
  }

  const cases: [what: string, path: () => string, before: number][] = [
    ['a page of conversations', () => '/conversations', 200],
    ['a page of a status filter', () => '/conversations?status=active', 200],
    ['a three-character search', () => '/conversations?search=tin', 200],
    ['a search by phone digits', () => '/conversations?search=5550188', 200],
    ['a search that finds nothing', () => '/conversations?search=nobody-at-all', 200],
    ['a conversation', () => `/conversations/${conversationId}`, 200],
    ['a conversation that does not exist', () => '/conversations/conv_missing', 404],
    ['a page of contacts with a tag', () => '/contacts?tag=vip', 200],
    ['a page of contacts', () => '/contacts', 200],
    ['a list with a bad filter', () => '/conversations?status=bogus', 400],
  ];

  describe.each(cases)('%s', (_what, path, before) => {
    it(`answers ${before} while the key is active and 401 on the very next request after another process revokes it`, async () => {
      const created = await keyInUse(path());
      const answered = await server().request('GET', path(), { key: created.key });
      expect(answered.status, answered.text).toBe(before);
      if (before === 200) expect(answered.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
      await revokeKeyElsewhere(server().databaseUrl, created.id);
      expectRefused(await server().request('GET', path(), { key: created.key }));
      expectRefused(await server().request('GET', path(), { key: created.key }));
      // Other keys of the account are not affected.
      expect((await server().request('GET', path())).status).toBe(before);
    });
  });

  it('a webhook key is 403 on a read while active, and 401 once revoked elsewhere', async () => {
    const created = await keyInUse('/conversations', 'webhook');
    expectError(await server().request('GET', '/conversations', { key: created.key }), 403, 'forbidden');
    await revokeKeyElsewhere(server().databaseUrl, created.id);
    expectRefused(await server().request('GET', '/conversations', { key: created.key }));
  });

  it('a read whose statement returns a row does not look its key up again; one that returns none looks it up once', async () => {
    const created = await keyInUse('/conversations', 'read_only');
    const lookups = vi.spyOn(apiKeysRepository, 'findActiveByHash');
    for (const path of ['/conversations', '/conversations?search=tin', `/conversations/${conversationId}`, '/contacts?tag=vip', '/contacts']) {
      const response = await server().request('GET', path, { key: created.key });
      expect(response.status, `${path}: ${response.text}`).toBe(200);
    }
    // A search that finds nothing still returns its total's row.
    expectBody(await server().request('GET', '/conversations?search=nobody-at-all', { key: created.key }), 200, ConversationList);
    expect(lookups).not.toHaveBeenCalled();

    expectError(await server().request('GET', '/conversations/conv_missing', { key: created.key }), 404, 'not_found');
    // Postgres: the read returned no row, so the key was looked up after it. SQLite: the
    // principal cache answers, as for every other request.
    expect(lookups).toHaveBeenCalledTimes(server().dialect === 'postgres' ? 1 : 0);
  });

  it('operations outside the hot reads, and writes, look their key up first as before', async () => {
    const created = await keyInUse('/contacts');
    expectBody(await server().request('GET', '/contacts', { key: created.key }), 200, ContactList);
    await revokeKeyElsewhere(server().databaseUrl, created.id);
    expectRefused(await server().request('GET', `/conversations/${conversationId}/messages`, { key: created.key }));
    expectRefused(await server().request('POST', '/contacts', { key: created.key, body: { phone: '+14155550189' } }));
  });
});

/**
 * With the rate limits in Redis (REDIS_URL) and the database on Postgres, a request whose key is
 * checked by its reads is counted before its key is confirmed: when that count refuses it (429),
 * a key revoked meanwhile must still get its 401 (401 comes before 429). The machine's Redis is
 * only read and written here, under this test's own account.
 */
describe.skipIf(!ACTIVE_DIALECTS.includes('postgres'))('the key checked by the reads, with the rate limits in Redis [postgres]', () => {
  let target: TestDatabase;
  let database: DatabaseHandle;
  let close: () => Promise<void>;
  let baseUrl: string;

  beforeAll(async () => {
    target = await createTestDatabase('postgres');
    database = openDatabase(target.url);
    await migrateToLatest(database.db);
    const rateLimits = RateLimits.create({ database, redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
    const app = await buildServer({ database, settings: testSettings(), logger: false, rateLimits });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    baseUrl = `http://127.0.0.1:${address.port}/v1`;
    close = async () => {
      await app.close();
      await rateLimits.close();
    };
  });

  afterAll(async () => {
    await close?.();
    await database?.destroy();
    await target?.drop();
  });

  it('a key revoked elsewhere gets 401, not the 429 its account has reached', async () => {
    const account = await accountsService.createAccount(database, { name: 'Free, Redis', plan: 'free' });
    const created = await accountsService.createKey(database, { accountId: account.id, type: 'full_access' });
    const get = async () => {
      const response = await fetch(`${baseUrl}/conversations`, { headers: { authorization: `Bearer ${created.key}` } });
      return { status: response.status, headers: response.headers, text: await response.text() };
    };
    // Until the account's minute is spent: 60 requests, give or take the first few, which the
    // in-memory insurance limiter counts while the Redis client is still connecting.
    let limited = await get();
    for (let sent = 1; limited.status === 200 && sent < 200; sent++) limited = await get();
    expect(limited.status, limited.text).toBe(429);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await get()).status).toBe(429);

    await revokeKeyElsewhere(target.url, created.id);
    const refused = await get();
    expect(refused.status, refused.text).toBe(401);
    expect(JSON.parse(refused.text).error.code).toBe('unauthorized');
  });
});

