import type { DatabaseHandle } from '../db/database.js';
import { now } from '../ids.js';

/** How long a key is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** A `running` key untouched this long belongs to a request whose process died: it is taken over. */
const ABANDONED_AFTER_MS = 60_000;
/** How long a duplicate waits for the first request to finish before giving up with a 409-like 400. */
const WAIT_LIMIT_MS = 60_000;

export type IdempotencyStart =
  | { kind: 'new' }
  | { kind: 'replay'; status: number; body: string }
  | { kind: 'mismatch' }
  | { kind: 'busy' };

/** Thrown by the procedure chain to make the transport send a stored response as it was. */
export class IdempotentReplay extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super('idempotent replay');
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The memory of POST requests sent with an `Idempotency-Key`, per account, for 24 hours: the first
 * request runs and its response is stored; a repeat with the same body gets that response again,
 * byte for byte; a repeat while the first is running waits for it. 5xx responses are forgotten,
 * so the request can be tried again.
 */
export const idempotency = {
  async start(database: DatabaseHandle, accountId: string, key: string, requestHash: string): Promise<IdempotencyStart> {
    const { db } = database;
    const deadline = Date.now() + WAIT_LIMIT_MS;
    while (Date.now() < deadline) {
      const at = now();
      const inserted = await db
        .insertInto('idempotency_keys')
        .values({ account_id: accountId, key, request_hash: requestHash, state: 'running', response_status: null, response_body: null, created_at: at, updated_at: at })
        .onConflict((oc) => oc.columns(['account_id', 'key']).doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0) return { kind: 'new' };

      const row = await db.selectFrom('idempotency_keys').selectAll().where('account_id', '=', accountId).where('key', '=', key).executeTakeFirst();
      if (!row) continue;
      const expired = Date.parse(row.created_at) < Date.now() - IDEMPOTENCY_TTL_MS;
      const abandoned = row.state === 'running' && Date.parse(row.updated_at) < Date.now() - ABANDONED_AFTER_MS;
      if (expired || abandoned) {
        await db.deleteFrom('idempotency_keys').where('account_id', '=', accountId).where('key', '=', key).where('updated_at', '=', row.updated_at).execute();
        continue;
      }
      if (row.request_hash !== requestHash) return { kind: 'mismatch' };
      if (row.state === 'done') return { kind: 'replay', status: row.response_status as number, body: row.response_body ?? '' };
      await sleep(25);
    }
    return { kind: 'busy' };
  },

  /** Stores the response of a finished first request; a 5xx is not stored (the key is freed). */
  async finish(database: DatabaseHandle, accountId: string, key: string, status: number, body: string): Promise<void> {
    if (status >= 500) {
      await database.db.deleteFrom('idempotency_keys').where('account_id', '=', accountId).where('key', '=', key).where('state', '=', 'running').execute();
      return;
    }
    await database.db
      .updateTable('idempotency_keys')
      .set({ state: 'done', response_status: status, response_body: body, updated_at: now() })
      .where('account_id', '=', accountId)
      .where('key', '=', key)
      .execute();
  },

  /** Forgets keys older than 24 hours (the worker's retention job). */
  prune: (database: DatabaseHandle) =>
    database.db.deleteFrom('idempotency_keys').where('created_at', '<', new Date(Date.now() - IDEMPOTENCY_TTL_MS).toISOString()).execute(),
};
