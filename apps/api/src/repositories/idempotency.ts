import type { Selectable } from 'kysely';
import type { IdempotencyKeyTable } from '../db/schema.js';
import { now } from '../ids.js';
import type { Executor } from './tenant.js';

/** How long a key is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export type IdempotencyKeyRow = Selectable<IdempotencyKeyTable>;

/** A request's claim on an account's key: the hash says which request it was. */
export interface IdempotencyClaim {
  accountId: string;
  key: string;
  requestHash: string;
}

/** A response as it is kept for a key: its status and body exactly as sent ('' for none). */
export interface StoredResponse {
  status: number;
  body: string;
}

const rowOf = (claim: IdempotencyClaim, stored: StoredResponse | undefined) => {
  const at = now();
  return {
    account_id: claim.accountId,
    key: claim.key,
    request_hash: claim.requestHash,
    state: stored ? ('done' as const) : ('running' as const),
    response_status: stored?.status ?? null,
    response_body: stored?.body ?? null,
    created_at: at,
    updated_at: at,
  };
};

/** The statements of idempotent requests (the operation runner, operations.ts, holds their transaction). */
export const idempotencyKeysRepository = {
  /** Takes the key for a request that is running: false when the account already has this key. */
  async claim(db: Executor, claim: IdempotencyClaim): Promise<boolean> {
    const result = await db
      .insertInto('idempotency_keys')
      .values(rowOf(claim, undefined))
      .onConflict((oc) => oc.columns(['account_id', 'key']).doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  },

  find(db: Executor, accountId: string, key: string): Promise<IdempotencyKeyRow | undefined> {
    const ofAccount = db.selectFrom('idempotency_keys').selectAll().where('account_id', '=', accountId);
    return ofAccount.where('key', '=', key).executeTakeFirst();
  },

  delete: (db: Executor, accountId: string, key: string) =>
    db.deleteFrom('idempotency_keys').where('account_id', '=', accountId).where('key', '=', key).execute(),

  /** Keeps the response of the request that holds the key. */
  storeResponse: (db: Executor, claim: Omit<IdempotencyClaim, 'requestHash'>, response: StoredResponse) =>
    db
      .updateTable('idempotency_keys')
      .set({ state: 'done', response_status: response.status, response_body: response.body, updated_at: now() })
      .where('account_id', '=', claim.accountId)
      .where('key', '=', claim.key)
      .execute(),

  /** Keeps a response for the key outside its request's transaction, unless a duplicate kept one meanwhile. */
  insertResponse: (db: Executor, claim: IdempotencyClaim, response: StoredResponse) =>
    db
      .insertInto('idempotency_keys')
      .values(rowOf(claim, response))
      .onConflict((oc) => oc.columns(['account_id', 'key']).doNothing())
      .execute(),

  /** Forgets the keys older than IDEMPOTENCY_TTL_MS (the worker's retention job). */
  prune: (db: Executor) =>
    db
      .deleteFrom('idempotency_keys')
      .where('created_at', '<', new Date(Date.now() - IDEMPOTENCY_TTL_MS).toISOString())
      .execute(),
};
