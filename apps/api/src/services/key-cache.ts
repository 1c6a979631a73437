import type { DatabaseHandle } from '../db/database.js';
import type { AccountTable } from '../db/schema.js';
import type { KeyType } from '../keys.js';

/** The caller of an API request, once its key is known. */
export interface Principal {
  account: { id: string; name: string; plan: AccountTable['plan']; rateLimit: number };
  key: { id: string; type: KeyType };
}

/** What authentication needs again of a key it has looked up. */
export interface KnownKey {
  principal: Principal;
  /** When the key's use was last written down (epoch ms; 0 for never). */
  lastUsedAt: number;
}

/** Keys remembered per process: beyond it the least recently stored is forgotten first. */
const MAX_KEYS = 10_000;

/**
 * The keys this process has authenticated, by hash, with their callers. It exists for SQLite's
 * get-by-id target (bench/README.md): there the key's lookup was a fifth of a read's CPU. Only
 * where the database says cheaply that another connection committed (SQLite's data_version, see
 * DatabaseHandle.commitsElsewhere): everything remembered is dropped when another process wrote
 * (the operator's `convo-server keys revoke`) and when this process revokes a key, so a revoked
 * key still fails on the very next request. Postgres, which instances share, has none.
 */
export class KeyCache {
  private readonly keys = new Map<string, KnownKey>();
  private version: number;
  /** Counts the drops: a lookup that began before one is not stored. */
  private drops = 0;

  constructor(private readonly commitsElsewhere: () => number) {
    this.version = commitsElsewhere();
  }

  /**
   * The key with this hash: remembered, or found by `lookUp` and remembered unless everything was
   * dropped while it ran (it may have read what a revocation changed). A remembered key is
   * returned as it is, without a promise: the hot path of every request.
   */
  recallOr(keyHash: string, lookUp: () => Promise<KnownKey>): KnownKey | Promise<KnownKey> {
    const version = this.commitsElsewhere();
    if (version !== this.version) {
      this.version = version;
      this.forget();
    }
    const remembered = this.keys.get(keyHash);
    return remembered ?? this.lookUpAndRemember(keyHash, lookUp);
  }

  private async lookUpAndRemember(keyHash: string, lookUp: () => Promise<KnownKey>): Promise<KnownKey> {
    const drops = this.drops;
    const found = await lookUp();
    if (drops === this.drops) {
      if (this.keys.size >= MAX_KEYS) this.keys.delete(this.keys.keys().next().value as string);
      this.keys.set(keyHash, found);
    }
    return found;
  }

  /** Drops every key: after this process revoked one. */
  forget(): void {
    this.keys.clear();
    this.drops++;
  }
}

const caches = new WeakMap<DatabaseHandle, KeyCache | null>();

/** The key cache of this database, or undefined where it may not have one (see KeyCache). */
export function keyCacheOf(database: DatabaseHandle): KeyCache | undefined {
  let cache = caches.get(database);
  if (cache === undefined) {
    cache = database.commitsElsewhere ? new KeyCache(database.commitsElsewhere) : null;
    caches.set(database, cache);
  }
  return cache ?? undefined;
}
