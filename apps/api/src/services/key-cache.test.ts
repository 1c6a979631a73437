import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { hashKey } from '../keys.js';
import { type TestDatabase, createTestDatabase } from '../testing/databases.js';
import { ACTIVE_DIALECTS } from '../testing/harness.js';
import { KeyCache, type KnownKey, accountsService, keyCacheOf } from './accounts.js';

const knownKey = (keyId: string): KnownKey => ({
  principal: {
    account: { id: 'acct_1', name: 'A', plan: 'free', rateLimit: 60 },
    key: { id: keyId, type: 'full_access' },
  },
  lastUsedAt: 0,
});

/** The cache asks the database once per turn of the event loop: a commit is seen from the next turn on. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** The key the cache remembers for this hash, or undefined when it had to look it up (and then remembers `fresh`). */
async function remembered(
  cache: KeyCache,
  keyHash: string,
  fresh = knownKey('key_fresh'),
): Promise<KnownKey | undefined> {
  let lookedUp = false;
  const known = await cache.recallOr(keyHash, async () => {
    lookedUp = true;
    return fresh;
  });
  return lookedUp ? undefined : known;
}

describe('KeyCache', () => {
  it('recalls what a lookup stored until another connection commits', async () => {
    let version = 1;
    const cache = new KeyCache(() => version);
    expect(await remembered(cache, 'h1', knownKey('key_1'))).toBeUndefined();
    expect((await remembered(cache, 'h1'))?.principal.key.id).toBe('key_1');

    version = 2;
    expect((await remembered(cache, 'h1'))?.principal.key.id).toBe('key_1');
    await nextTurn();
    expect(await remembered(cache, 'h1')).toBeUndefined();
  });

  it('does not store a lookup that began before a drop (a revocation may have raced it)', async () => {
    let version = 1;
    const cache = new KeyCache(() => version);
    const raced = await cache.recallOr('h1', async () => {
      cache.forget();
      return knownKey('key_1');
    });
    expect(raced.principal.key.id).toBe('key_1');
    expect(await remembered(cache, 'h1')).toBeUndefined();

    await cache.recallOr('h2', async () => {
      version = 2;
      await nextTurn();
      // Another request sees the commit first and drops everything.
      expect(await remembered(cache, 'h3')).toBeUndefined();
      return knownKey('key_2');
    });
    expect(await remembered(cache, 'h2')).toBeUndefined();
  });

  it('forgets the key stored longest ago once it holds 10,000', async () => {
    const cache = new KeyCache(() => 1);
    for (let i = 0; i <= 10_000; i++) await remembered(cache, `h${i}`, knownKey(`key_${i}`));
    expect((await remembered(cache, 'h1'))?.principal.key.id).toBe('key_1');
    expect((await remembered(cache, 'h10000'))?.principal.key.id).toBe('key_10000');
    // Last: looking it up stores it again, and forgets h1.
    expect(await remembered(cache, 'h0')).toBeUndefined();
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
    accountId = (await accountsService.createAccount({ database }, { name: 'Cache', plan: 'free' })).id;
  });

  afterAll(async () => {
    await elsewhere?.destroy();
    await database?.destroy();
    await target?.drop();
  });

  it(
    dialect === 'sqlite'
      ? 'SQLite remembers a key, and drops it when another connection commits'
      : 'Postgres, shared by instances, remembers none',
    async () => {
      const created = await accountsService.createKey({ database }, { accountId, type: 'full_access' });
      const principal = await accountsService.authenticate({ database }, `Bearer ${created.key}`);
      expect(principal).toEqual({
        account: { id: accountId, name: 'Cache', plan: 'free', rateLimit: 60 },
        key: { id: created.id, type: 'full_access' },
      });
      const cache = keyCacheOf(database);
      if (dialect === 'postgres') {
        expect(cache).toBeUndefined();
        return;
      }
      expect(cache && (await remembered(cache, hashKey(created.key)))?.principal).toEqual(principal);
      // Any commit of another connection, here one that does not touch the key at all.
      await accountsService.createAccount({ database: elsewhere }, { name: 'Other', plan: 'free' });
      await nextTurn();
      expect(cache && (await remembered(cache, hashKey(created.key)))).toBeUndefined();
    },
  );
});
