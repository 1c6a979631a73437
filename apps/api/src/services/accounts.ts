import type { DatabaseHandle } from '../db/database.js';
import type { AccountTable } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { newId, now } from '../ids.js';
import { type KeyType, generateKey, hashKey, redactKey } from '../keys.js';
import { type AccountRow, type ApiKeyRow, accountsRepository, apiKeysRepository } from '../repositories/accounts.js';
import type { AccountContext, UnscopedContext } from './context.js';

export type Plan = AccountTable['plan'];
export const PLANS = ['free', 'starter', 'growth', 'business', 'enterprise'] as const satisfies readonly Plan[];
export const KEY_TYPES = ['full_access', 'read_only', 'webhook'] as const satisfies readonly KeyType[];

/** Requests per minute by plan; enterprise accounts carry their own number. */
export const PLAN_RATE_LIMITS: Record<Exclude<Plan, 'enterprise'>, number> = {
  free: 60,
  starter: 120,
  growth: 300,
  business: 600,
};

export const rateLimitOf = (account: Pick<AccountRow, 'plan' | 'rate_limit_rpm'>): number =>
  account.rate_limit_rpm ??
  (account.plan === 'enterprise' ? PLAN_RATE_LIMITS.business : PLAN_RATE_LIMITS[account.plan]);

export interface KeyRecord {
  id: string;
  account_id: string;
  type: KeyType;
  name: string | null;
  redacted: string;
  last_used_at: string | null;
  revoked_at: string | null;
  revoked_by: string | null;
  created_at: string;
}

/** A new key of `accountId` as stored (only its hash, and a webhook key's secret) and its value, shown once. */
export function newKeyRow(accountId: string, type: KeyType, name?: string | null): { row: ApiKeyRow; key: string } {
  const key = generateKey(type);
  const row: ApiKeyRow = {
    id: newId('apiKey'),
    account_id: accountId,
    type,
    name: name ?? null,
    redacted: redactKey(key),
    key_hash: hashKey(key),
    signing_secret: type === 'webhook' ? key : null,
    last_used_at: null,
    revoked_at: null,
    revoked_by: null,
    created_at: now(),
  };
  return { row, key };
}

const toKeyRecord = (row: ApiKeyRow): KeyRecord => ({
  id: row.id,
  account_id: row.account_id,
  type: row.type,
  name: row.name,
  redacted: row.redacted,
  last_used_at: row.last_used_at,
  revoked_at: row.revoked_at,
  revoked_by: row.revoked_by,
  created_at: row.created_at,
});

/** last_used_at is written at most this often per key, so reads do not all turn into writes. */
const TOUCH_INTERVAL_MS = 60_000;

export const accountsService = {
  async createAccount(
    { database }: UnscopedContext,
    input: { name: string; plan: Plan; rateLimitRpm?: number | undefined },
  ): Promise<AccountRow> {
    if (input.plan === 'enterprise' && input.rateLimitRpm === undefined) {
      throw new Error('An enterprise account needs its own rate limit (--rpm N)');
    }
    const at = now();
    const row: AccountRow = {
      id: newId('account'),
      name: input.name,
      plan: input.plan,
      rate_limit_rpm: input.rateLimitRpm ?? null,
      created_at: at,
      updated_at: at,
    };
    await accountsRepository.insert(database.db, row);
    return row;
  },

  findAccount: ({ database }: UnscopedContext, id: string) => accountsRepository.findById(database.db, id),
  findAccountByName: ({ database }: UnscopedContext, name: string) => accountsRepository.findByName(database.db, name),

  /** Creates a key and returns its value: the only time the value is ever shown. */
  async createKey(
    { database }: UnscopedContext,
    input: { accountId: string; type: KeyType; name?: string | undefined },
  ) {
    const account = await accountsRepository.findById(database.db, input.accountId);
    if (!account) throw new Error(`No such account: ${input.accountId}`);
    const { row, key } = newKeyRow(account.id, input.type, input.name);
    await apiKeysRepository.insert(database.db, row);
    return { ...toKeyRecord(row), key };
  },

  async listKeys({ database, accountId }: AccountContext): Promise<KeyRecord[]> {
    return (await apiKeysRepository.listByAccount(database.db, accountId)).map(toKeyRecord);
  },

  /** Revokes a key; it stops working on the very next request (a process forgets the keys it remembered). */
  async revokeKey({ database }: UnscopedContext, keyId: string): Promise<KeyRecord> {
    const existing = await apiKeysRepository.findById(database.db, keyId);
    if (!existing) throw new Error(`No such key: ${keyId}`);
    if (existing.revoked_at === null) await revoke(database, keyId, 'operator');
    return toKeyRecord((await apiKeysRepository.findById(database.db, keyId)) as ApiKeyRow);
  },

  /** Revokes a key of the account for `by` (the console's revoke); another account's key is 404, as in the API. */
  async revokeAccountKey(
    { database, accountId }: AccountContext,
    { id, by }: { id: string; by: string },
  ): Promise<KeyRecord> {
    const existing = await apiKeysRepository.findById(database.db, id);
    if (!existing || existing.account_id !== accountId || existing.revoked_at !== null)
      throw ApiError.notFound('key', id);
    await revoke(database, id, by);
    return toKeyRecord((await apiKeysRepository.findById(database.db, id)) as ApiKeyRow);
  },

  /**
   * Who is calling, from the `Authorization` header: `Bearer <key>`, the scheme in any case. The
   * key is looked up by its hash (or recalled, on SQLite: KeyCache below), so a revoked key
   * fails on the very next request on every instance. Anything else, or a key that is unknown or
   * revoked, is 401.
   */
  async authenticate({ database }: UnscopedContext, authorization: string | undefined): Promise<Principal> {
    const keyHash = hashKey(bearerKey(authorization));
    const lookUp = () => lookUpKey(database, keyHash);
    const cache = keyCacheOf(database);
    const known = await (cache ? cache.recallOr(keyHash, lookUp) : lookUp());
    await touchWhenDue(database, known);
    return known.principal;
  },
};

/** Revokes a key and has this process forget the keys it remembered (KeyCache). */
async function revoke(database: DatabaseHandle, keyId: string, by: string): Promise<void> {
  await apiKeysRepository.revoke(database.db, keyId, now(), by);
  keyCacheOf(database)?.forget();
}

/** The active key with this hash and its account; 401 when there is none, saying so when it was revoked. */
async function lookUpKey(database: DatabaseHandle, keyHash: string): Promise<KnownKey> {
  const row = await apiKeysRepository.findActiveByHash(database.db, database.capabilities, keyHash);
  if (!row) throw await refusal(database, keyHash);
  return {
    principal: {
      account: {
        id: row.account_id,
        name: row.account_name,
        plan: row.account_plan,
        rateLimit: rateLimitOf({ plan: row.account_plan, rate_limit_rpm: row.account_rate_limit_rpm }),
      },
      key: { id: row.id, type: row.type },
    },
    lastUsedAt: row.last_used_at === null ? 0 : Date.parse(row.last_used_at),
  };
}

/**
 * Why a key is refused: a revoked key is told so with its redacted start and when (as Stripe names an expired key),
 * anything else stays "Invalid API key", which gives a guesser nothing.
 */
async function refusal(database: DatabaseHandle, keyHash: string): Promise<ApiError> {
  const key = await apiKeysRepository.findByHash(database.db, keyHash);
  if (key?.revoked_at) return ApiError.unauthorized(`This API key (${key.redacted}) was revoked at ${key.revoked_at}`);
  return ApiError.unauthorized('Invalid API key');
}

/** The key of a `Bearer <key>` header; 401 for anything else. */
function bearerKey(authorization: string | undefined): string {
  const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
  if (!match?.[1])
    throw ApiError.unauthorized(
      authorization
        ? 'Authorization must be "Bearer <API key>"'
        : 'Missing API key: send "Authorization: Bearer <API key>"',
    );
  return match[1];
}

/** Writes down the key's use unless it was written down within TOUCH_INTERVAL_MS. */
async function touchWhenDue(database: DatabaseHandle, known: KnownKey): Promise<void> {
  const nowMs = Date.now();
  if (nowMs - known.lastUsedAt < TOUCH_INTERVAL_MS) return;
  known.lastUsedAt = nowMs;
  await apiKeysRepository.touch(database.db, known.principal.key.id, new Date(nowMs).toISOString());
}

// The keys this process remembers -------------------------------------------------------------------------------------

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
  private checkedThisTurn = false;

  constructor(private readonly commitsElsewhere: () => number) {
    this.version = commitsElsewhere();
  }

  /**
   * Asks the database at most once per turn of the event loop: a request read in this turn arrived after the turn
   * began, so after every commit that could have come before it, and the first check of the turn sees them all.
   */
  private check(): void {
    this.checkedThisTurn = true;
    setImmediate(() => {
      this.checkedThisTurn = false;
    });
    const version = this.commitsElsewhere();
    if (version !== this.version) {
      this.version = version;
      this.forget();
    }
  }

  /**
   * The key with this hash: remembered, or found by `lookUp` and remembered unless everything was
   * dropped while it ran (it may have read what a revocation changed). A remembered key is
   * returned as it is, without a promise: the hot path of every request.
   */
  recallOr(keyHash: string, lookUp: () => Promise<KnownKey>): KnownKey | Promise<KnownKey> {
    if (!this.checkedThisTurn) this.check();
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
