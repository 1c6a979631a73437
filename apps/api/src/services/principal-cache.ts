import { type DatabaseHandle, sqliteDataVersion } from '../db/database.js';
import type { Principal } from './accounts.js';

/** What is kept of an active key: who calls with it, and when its use was last written down. */
export interface CachedPrincipal {
  principal: Principal;
  /** When the key's use was last written down (ms since the epoch), or null if never. */
  lastUsedMs: number | null;
}

/** More keys than any deployment on one SQLite file uses: past it the cache starts over. */
const MAX_KEYS = 10_000;

interface Cache {
  /** sqliteDataVersion when the entries were read. */
  version: number;
  /** `revisions` when the entries were read. */
  revision: number;
  byHash: Map<string, CachedPrincipal>;
}

const caches = new WeakMap<object, Cache>();
/**
 * Bumped when this process revokes a key (forgetAll): the one change this process makes that can
 * make a kept principal wrong (accounts are never updated; a new key is read when first used).
 */
let revisions = 0;

/**
 * Postgres, per database: key hash → the principal last read for it (remember). Never trusted
 * alone: a request that uses one carries a key check that its reads, or a lookup after them,
 * must confirm.
 */
let rememberedByDatabase = new WeakMap<object, Map<string, CachedPrincipal>>();

function rememberedOf(database: DatabaseHandle): Map<string, CachedPrincipal> {
  let remembered = rememberedByDatabase.get(database.db);
  if (!remembered) rememberedByDatabase.set(database.db, (remembered = new Map()));
  return remembered;
}

/**
 * The principals of active keys by key hash, on SQLite: every API request authenticates, and
 * reading the key and its account took 14 % of the server's CPU under `GET /conversations/:id`;
 * kept, that route serves about 8 % more requests per second (bench/README.md). A key still
 * stops working on the very next request after it is revoked (SERVICE-SPEC: "Revocation takes
 * effect immediately"):
 * - a change made by another process (the operator's `convo-server keys revoke`) changes SQLite's
 *   `data_version`, which each lookup checks (2 µs, no page read): the cache starts over;
 * - a change made by this process goes through accountsService, which calls forgetAll.
 * Unknown and revoked keys are never kept: they are read (and refused) every time. Postgres,
 * which several server processes share, checks the key on every request: in the same statement
 * that counts the request (rate limits), by a lookup of its own, or, for a read operation with a
 * key seen before, inside the request's own reads (remember, recall; repositories/key-check.ts).
 */
export const principalCache = {
  /**
   * The kept principal of this key hash, if any, and `keep` to store the one read from the
   * database instead. `keep` stores nothing if the database or the cache changed since the lookup:
   * a row read after another process revoked the key must not outlive that change. Undefined when
   * nothing may be kept (Postgres; a transaction is open).
   */
  lookup(database: DatabaseHandle, keyHash: string): { found: CachedPrincipal | undefined; keep(entry: CachedPrincipal): void } | undefined {
    const cache = currentCache(database);
    if (!cache) return undefined;
    const { version, revision } = cache;
    return {
      found: cache.byHash.get(keyHash),
      keep(entry) {
        if (cache.version !== version || cache.revision !== revision || revisions !== revision) return;
        if (cache.byHash.size >= MAX_KEYS) cache.byHash.clear();
        cache.byHash.set(keyHash, entry);
      },
    };
  },

  /** The kept principal of this key hash, if any (lookup without the means to keep one). */
  find(database: DatabaseHandle, keyHash: string): CachedPrincipal | undefined {
    return currentCache(database)?.byHash.get(keyHash);
  },

  /** Forgets every kept principal (a key or an account changed in this process). */
  forgetAll(): void {
    revisions++;
    rememberedByDatabase = new WeakMap();
  },

  /**
   * On Postgres: keeps the principal of a key just read as active, for the next read operations
   * with it, which use it only with a key check in their statements (repositories/key-check.ts).
   */
  remember(database: DatabaseHandle, keyHash: string, entry: CachedPrincipal): void {
    if (database.dialect !== 'postgres') return;
    const remembered = rememberedOf(database);
    if (remembered.size >= MAX_KEYS && !remembered.has(keyHash)) remembered.delete(remembered.keys().next().value as string);
    remembered.set(keyHash, entry);
  },

  /** The principal remembered for this key hash on Postgres (remember), unconfirmed: see key-check.ts. */
  recall(database: DatabaseHandle, keyHash: string): CachedPrincipal | undefined {
    return database.dialect === 'postgres' ? rememberedByDatabase.get(database.db)?.get(keyHash) : undefined;
  },

  /** Forgets what is remembered of a key that failed its check. */
  forget(database: DatabaseHandle, keyHash: string): void {
    rememberedByDatabase.get(database.db)?.delete(keyHash);
  },
};

/** The cache of this database as of now (emptied if the database changed meanwhile), or undefined when it cannot be used. */
function currentCache(database: DatabaseHandle): Cache | undefined {
  if (database.dialect !== 'sqlite') return undefined;
  const version = sqliteDataVersion(database.db);
  if (version === undefined) return undefined;
  let cache = caches.get(database.db);
  if (!cache) {
    cache = { version, revision: revisions, byHash: new Map() };
    caches.set(database.db, cache);
  } else if (cache.version !== version || cache.revision !== revisions) {
    cache.version = version;
    cache.revision = revisions;
    cache.byHash.clear();
  }
  return cache;
}
