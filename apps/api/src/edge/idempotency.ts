import { createHash } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { DatabaseHandle } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { ReferenceGone, runTransaction } from '../db/transactions.js';
import { ApiError, toErrorBody } from '../errors.js';
import { now } from '../ids.js';
import type { Executor } from '../repositories/tenant.js';

/** How long a key is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const HEADER = 'Idempotency-Key';

/** What an operation answered: its status and body exactly as sent ('' for none). */
export interface OperationResponse {
  status: number;
  body: string;
}

/**
 * A response as the transports send it, whether replayed or not; built field by field so every
 * path hands the route handler one object shape (they share one set of V8 inline caches).
 */
export const answered = ({ status, body }: OperationResponse, replayed: boolean): OperationResponse & { replayed: boolean } => ({ status, body, replayed });

/** An operation's error, marked so that the response it caused is kept like any other. */
class RefusedByOperation extends Error {
  constructor(readonly apiError: ApiError) {
    super(apiError.message);
  }
}

/** What makes two requests "the same" for a key: the operation and its whole input. */
export const requestHashOf = (operationId: string, input: unknown): string =>
  createHash('sha256').update(operationId).update('\n').update(JSON.stringify(input)).digest('hex');

/** 400 unless the header's value can be a key. */
function checkKey(key: string): void {
  if (key.length === 0) throw ApiError.badRequest(HEADER, 'min_length', 'Idempotency-Key must not be empty');
  if (key.length > 255) throw ApiError.badRequest(HEADER, 'max_length', 'Idempotency-Key must have at most 255 characters');
}

/**
 * Runs a POST that carries an `Idempotency-Key` at most once per account and key for 24 hours, as
 * Stripe does. The key is claimed by inserting its row in the same transaction as the operation,
 * and the response stored there before commit: a duplicate that arrives meanwhile blocks on that
 * row (Postgres waits for the first transaction; SQLite's one connection runs transactions in
 * turn) and then finds the stored response, which it replays. A 5xx rolls back with everything
 * else, so the request can be retried; an error the operation itself answered (404, a refused
 * transition) is stored like a success. The same key with another request is 400.
 */
export async function idempotently(
  database: DatabaseHandle,
  claim: { accountId: string; key: string; requestHash: string },
  execute: (trx: Transaction<Database>) => Promise<OperationResponse>,
): Promise<OperationResponse & { replayed: boolean }> {
  checkKey(claim.key);
  try {
    return await runTransaction(database.db, async (trx) => {
      const stored = await claimKey(trx, claim);
      if (stored) return answered(stored, true);
      let response: OperationResponse;
      try {
        response = await execute(trx);
      } catch (error) {
        throw error instanceof ApiError && error.status < 500 ? new RefusedByOperation(error) : error;
      }
      await storeResponse(trx, claim, response);
      return answered(response, false);
    });
  } catch (error) {
    // A 404 for what a concurrent delete removed is the operation's answer too (runTransaction
    // tells it only once the transaction is rolled back).
    const sent = error instanceof RefusedByOperation ? error.apiError : error instanceof ReferenceGone ? error : undefined;
    if (!sent) throw error;
    // The operation's own changes are rolled back; what it answered is kept, unless a duplicate
    // that ran meanwhile already stored its own answer.
    await database.db
      .insertInto('idempotency_keys')
      .values({ ...rowOf(claim), state: 'done', response_status: sent.status, response_body: JSON.stringify(toErrorBody(sent)) })
      .onConflict((oc) => oc.columns(['account_id', 'key']).doNothing())
      .execute();
    throw sent;
  }
}

const rowOf = (claim: { accountId: string; key: string; requestHash: string }) => {
  const at = now();
  return { account_id: claim.accountId, key: claim.key, request_hash: claim.requestHash, created_at: at, updated_at: at };
};

/** Takes the key for this request, or returns the response stored for it (400 for another request). */
async function claimKey(trx: Executor, claim: { accountId: string; key: string; requestHash: string }): Promise<OperationResponse | undefined> {
  const insert = () =>
    trx
      .insertInto('idempotency_keys')
      .values({ ...rowOf(claim), state: 'running', response_status: null, response_body: null })
      .onConflict((oc) => oc.columns(['account_id', 'key']).doNothing())
      .executeTakeFirst();
  if (Number((await insert()).numInsertedOrUpdatedRows ?? 0) > 0) return undefined;
  const row = await trx
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('account_id', '=', claim.accountId)
    .where('key', '=', claim.key)
    .executeTakeFirstOrThrow();
  if (Date.parse(row.created_at) < Date.now() - IDEMPOTENCY_TTL_MS) {
    // Expired but not yet pruned: the key is free again.
    await trx.deleteFrom('idempotency_keys').where('account_id', '=', claim.accountId).where('key', '=', claim.key).execute();
    await insert();
    return undefined;
  }
  if (row.request_hash !== claim.requestHash) {
    throw ApiError.badRequest(HEADER, 'idempotency_key', 'This Idempotency-Key was used with a different request in the last 24 hours');
  }
  return { status: row.response_status as number, body: row.response_body ?? '' };
}

async function storeResponse(trx: Executor, claim: { accountId: string; key: string }, response: OperationResponse): Promise<void> {
  await trx
    .updateTable('idempotency_keys')
    .set({ state: 'done', response_status: response.status, response_body: response.body, updated_at: now() })
    .where('account_id', '=', claim.accountId)
    .where('key', '=', claim.key)
    .execute();
}

/** Forgets keys older than 24 hours (the worker's retention job). */
export const pruneIdempotencyKeys = (database: DatabaseHandle) =>
  database.db
    .deleteFrom('idempotency_keys')
    .where('created_at', '<', new Date(Date.now() - IDEMPOTENCY_TTL_MS).toISOString())
    .execute();
