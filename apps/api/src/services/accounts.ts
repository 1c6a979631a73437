import type { DatabaseHandle } from '../db/database.js';
import type { AccountTable } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { newId, now } from '../ids.js';
import { type KeyType, generateKey, hashKey, redactKey } from '../keys.js';
import { type AccountRow, type ApiKeyRow, accountsRepository, apiKeysRepository } from '../repositories/accounts.js';
import type { CounterState } from '../repositories/rate-limits.js';
import { type CachedPrincipal, principalCache } from './principal-cache.js';

export type Plan = AccountTable['plan'];
export const PLANS = ['free', 'starter', 'growth', 'business', 'enterprise'] as const satisfies readonly Plan[];
export const KEY_TYPES = ['full_access', 'read_only', 'webhook'] as const satisfies readonly KeyType[];

/** Requests per minute by plan; enterprise accounts carry their own number. */
export const PLAN_RATE_LIMITS: Record<Exclude<Plan, 'enterprise'>, number> = { free: 60, starter: 120, growth: 300, business: 600 };

export const rateLimitOf = (account: Pick<AccountRow, 'plan' | 'rate_limit_rpm'>): number =>
  account.rate_limit_rpm ?? (account.plan === 'enterprise' ? PLAN_RATE_LIMITS.business : PLAN_RATE_LIMITS[account.plan]);

export interface KeyRecord {
  id: string;
  account_id: string;
  type: KeyType;
  name: string | null;
  redacted: string;
  last_used_at: string | null;
  revoked_at: string | null;
  created_at: string;
}

const toKeyRecord = (row: ApiKeyRow): KeyRecord => ({
  id: row.id,
  account_id: row.account_id,
  type: row.type,
  name: row.name,
  redacted: row.redacted,
  last_used_at: row.last_used_at,
  revoked_at: row.revoked_at,
  created_at: row.created_at,
});

/** The caller of an API request, once its key is known. */
export interface Principal {
  account: { id: string; name: string; plan: Plan; rateLimit: number };
  key: { id: string; type: KeyType };
}

/** last_used_at is written at most this often per key, so reads do not all turn into writes. */
const TOUCH_INTERVAL_MS = 60_000;

export const accountsService = {
  async createAccount(database: DatabaseHandle, input: { name: string; plan: Plan; rateLimitRpm?: number | undefined }): Promise<AccountRow> {
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

  findAccount: (database: DatabaseHandle, id: string) => accountsRepository.findById(database.db, id),
  findAccountByName: (database: DatabaseHandle, name: string) => accountsRepository.findByName(database.db, name),

  /** Creates a key and returns its value: the only time the value is ever shown. */
  async createKey(database: DatabaseHandle, input: { accountId: string; type: KeyType; name?: string | undefined }) {
    const account = await accountsRepository.findById(database.db, input.accountId);
    if (!account) throw new Error(`No such account: ${input.accountId}`);
    const key = generateKey(input.type);
    const row: ApiKeyRow = {
      id: newId('apiKey'),
      account_id: account.id,
      type: input.type,
      name: input.name ?? null,
      redacted: redactKey(key),
      key_hash: hashKey(key),
      signing_secret: input.type === 'webhook' ? key : null,
      last_used_at: null,
      revoked_at: null,
      created_at: now(),
    };
    await apiKeysRepository.insert(database.db, row);
    return { ...toKeyRecord(row), key };
  },

  async listKeys(database: DatabaseHandle, accountId: string): Promise<KeyRecord[]> {
    return (await apiKeysRepository.listByAccount(database.db, accountId)).map(toKeyRecord);
  },

  /** Revokes a key; it stops working on the very next request (see principalCache). */
  async revokeKey(database: DatabaseHandle, keyId: string): Promise<KeyRecord> {
    const existing = await apiKeysRepository.findById(database.db, keyId);
    if (!existing) throw new Error(`No such key: ${keyId}`);
    if (existing.revoked_at === null) await apiKeysRepository.revoke(database.db, keyId, now());
    principalCache.forgetAll();
    return toKeyRecord((await apiKeysRepository.findById(database.db, keyId)) as ApiKeyRow);
  },

  /**
   * Finds who is calling from the `Authorization` header: `Bearer <key>`, the scheme in any case.
   * Anything else, or a key that is unknown or revoked, is 401.
   */
  async authenticate(database: DatabaseHandle, authorization: string | undefined): Promise<Principal> {
    return accountsService.authenticateHash(database, accountsService.keyHashOf(authorization));
  },

  /** The hash by which a `Bearer <key>` header's key is stored; 401 for any other header. */
  keyHashOf: (authorization: string | undefined): string => hashKey(bearerKey(authorization)),

  /**
   * The caller of a key kept in memory whose use needs no writing down now (principalCache), at
   * once, without a promise; undefined otherwise: then authenticateHash.
   */
  knownPrincipal(database: DatabaseHandle, keyHash: string): Principal | undefined {
    return usableNow(principalCache.find(database, keyHash));
  },

  /** authenticate, from the key's hash (keyHashOf). */
  async authenticateHash(database: DatabaseHandle, keyHash: string): Promise<Principal> {
    const cached = principalCache.lookup(database, keyHash);
    const { found } = cached ?? {};
    if (found) {
      found.lastUsedMs = await touchWhenDue(database, found.principal.key.id, found.lastUsedMs);
      return found.principal;
    }
    const row = await apiKeysRepository.findActiveByHash(database.db, keyHash);
    if (!row) principalCache.forget(database, keyHash);
    const caller = await principalOf(database, row);
    cached?.keep(caller);
    principalCache.remember(database, keyHash, caller);
    return caller.principal;
  },

  /**
   * On Postgres, the caller last read for this key, if its use needs no writing down now: for a
   * read operation that checks the key inside its own reads (repositories/key-check.ts), never
   * alone. Undefined otherwise (then authenticateHash or authenticateCounting).
   */
  recalledPrincipal(database: DatabaseHandle, keyHash: string): Principal | undefined {
    return usableNow(principalCache.recall(database, keyHash));
  },

  /**
   * authenticateHash, and `points` requests counted against the account's per-minute window in
   * the same statement (the Postgres rate-limit store). Nothing is counted for a key that fails.
   */
  async authenticateCounting(database: DatabaseHandle, keyHash: string, nowMs: number, windowMs: number, points = 1): Promise<{ principal: Principal; counted: CounterState }> {
    const row = await apiKeysRepository.findActiveByHashCounting(database.db, keyHash, nowMs, windowMs, points);
    if (!row) principalCache.forget(database, keyHash);
    const caller = await principalOf(database, row);
    principalCache.remember(database, keyHash, caller);
    return { principal: caller.principal, counted: (row as { counted: CounterState }).counted };
  },
};

/** The key of a `Bearer <key>` header; 401 for anything else. */
function bearerKey(authorization: string | undefined): string {
  const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
  if (!match?.[1]) throw ApiError.unauthorized(authorization ? 'Authorization must be "Bearer <API key>"' : 'Missing API key: send "Authorization: Bearer <API key>"');
  return match[1];
}

/** The caller of an active key (401 without one); notes the key's use at most once a minute. */
async function principalOf(
  database: DatabaseHandle,
  row: (ApiKeyRow & { account_name: string; account_plan: AccountRow['plan']; account_rate_limit_rpm: number | null }) | undefined,
): Promise<CachedPrincipal> {
  if (!row) throw ApiError.unauthorized('Invalid API key');
  const lastUsedMs = await touchWhenDue(database, row.id, row.last_used_at === null ? null : Date.parse(row.last_used_at));
  const principal: Principal = {
    account: {
      id: row.account_id,
      name: row.account_name,
      plan: row.account_plan,
      rateLimit: rateLimitOf({ plan: row.account_plan, rate_limit_rpm: row.account_rate_limit_rpm }),
    },
    key: { id: row.id, type: row.type },
  };
  return { principal, lastUsedMs };
}

/** The principal of a kept entry whose use needs no writing down now; undefined otherwise. */
const usableNow = (found: CachedPrincipal | undefined): Principal | undefined => (found && !touchIsDue(found.lastUsedMs, Date.now()) ? found.principal : undefined);

/** Whether a key last written down as used at `lastUsedMs` must be written down again at `nowMs`. */
const touchIsDue = (lastUsedMs: number | null, nowMs: number): boolean => lastUsedMs === null || !(nowMs - lastUsedMs < TOUCH_INTERVAL_MS);

/** Writes down the key's use unless the last one written (`lastUsedMs`) is recent; when it was last written down. */
async function touchWhenDue(database: DatabaseHandle, keyId: string, lastUsedMs: number | null): Promise<number | null> {
  const nowMs = Date.now();
  if (!touchIsDue(lastUsedMs, nowMs)) return lastUsedMs;
  await apiKeysRepository.touch(database.db, keyId, new Date(nowMs).toISOString());
  return nowMs;
}
