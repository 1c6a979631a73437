import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { hashKey } from '../keys.js';
import { type TestDatabase, createTestDatabase } from '../testing/databases.js';
import { ACTIVE_DIALECTS } from '../testing/harness.js';
import { accountsService } from './accounts.js';
import { KeyCache, type KnownKey, keyCacheOf } from './key-cache.js';

const knownKey = (keyId: string): KnownKey => ({
  principal: { account: { id: 'acct_1', name: 'A', plan: 'free', rateLimit: 60 }, key: { id: keyId, type: 'full_access' } },
  lastUsedAt: 0,
});

describe('KeyCache', () => {
  it('recalls what a lookup stored until another connection commits', () => {
    let version = 1;
    const cache = new KeyCache(() => version);
    const first = cache.recall('h1');
    expect(first.known).toBeUndefined();
    cache.remember('h1', knownKey('key_1'), first.mark);
    expect(cache.recall('h1').known?.principal.key.id).toBe('key_1');

    version = 2;
    expect(cache.recall('h1').known).toBeUndefined();
  });

  it('does not store a lookup that began before a drop (a revocation may have raced it)', () => {
    let version = 1;
    const cache = new KeyCache(() => version);
    const beforeRevocation = cache.recall('h1');
    cache.forget();
    cache.remember('h1', knownKey('key_1'), beforeRevocation.mark);
    expect(cache.recall('h1').known).toBeUndefined();

    const beforeCommitElsewhere = cache.recall('h2');
    version = 2;
    // Another request sees the commit first and drops everything.
    expect(cache.recall('h3').known).toBeUndefined();
    cache.remember('h2', knownKey('key_2'), beforeCommitElsewhere.mark);
    expect(cache.recall('h2').known).toBeUndefined();
  });

  it('forgets the key stored longest ago once it holds 10,000', () => {
    const cache = new KeyCache(() => 1);
    for (let i = 0; i <= 10_000; i++) cache.remember(`h${i}`, knownKey(`key_${i}`), cache.recall(`h${i}`).mark);
    expect(cache.recall('h0').known).toBeUndefined();
    expect(cache.recall('h1').known?.principal.key.id).toBe('key_1');
    expect(cache.recall('h10000').known?.principal.key.id).toBe('key_10000');
  });
});

describe.each(ACTIVE_DIALECTS)('keys remembered on %s', (dialect) => {
  let target: TestDatabase;
  let database: DatabaseHandle;
  let elsewhere: DatabaseHandle;
  let accountId: string;

  beforeAll(async () => {
    target = await createTestDatabase(dialect);
    database = openDatabase(target.url);
    await migrateToLatest(database.db);
    elsewhere = openDatabase(target.url);
    accountId = (await accountsService.createAccount(database, { name: 'Cache', plan: 'free' })).id;
  });

  afterAll(async () => {
    await elsewhere?.destroy();
    await database?.destroy();
    await target?.drop();
  });

  it(
    dialect === 'sqlite' ? 'SQLite remembers a key, and drops it when another connection commits' : 'Postgres, shared by instances, remembers none',
    async () => {
      const created = await accountsService.createKey(database, { accountId, type: 'full_access' });
      const principal = await accountsService.authenticate(database, `Bearer ${created.key}`);
      expect(principal).toEqual({ account: { id: accountId, name: 'Cache', plan: 'free', rateLimit: 60 }, key: { id: created.id, type: 'full_access' } });
      const cache = keyCacheOf(database);
      if (dialect === 'postgres') {
        expect(cache).toBeUndefined();
        return;
      }
      expect(cache?.recall(hashKey(created.key)).known?.principal).toEqual(principal);
      // Any commit of another connection, here one that does not touch the key at all.
      await accountsService.createAccount(elsewhere, { name: 'Other', plan: 'free' });
      expect(cache?.recall(hashKey(created.key)).known).toBeUndefined();
    },
  );
});
