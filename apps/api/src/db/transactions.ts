import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely, Transaction } from 'kysely';
import { ApiError } from '../errors.js';
import type { Dialect } from './dialect.js';
import type { Database } from './schema.js';

/** Runs of one transaction at most: a deadlock or serialization failure rarely strikes the same work twice. */
export const TRANSACTION_ATTEMPTS = 5;
/** The first retry waits up to this long (full jitter), each later one up to twice the one before. */
const FIRST_BACKOFF_MS = 4;

/**
 * What each foreign key of the schema refers to, for the 404 a write answers when that row was
 * deleted by a concurrent transaction after the write had found it: the contract's answer, as if
 * the delete had come first. `again` marks references the transaction read just before writing
 * (the endpoints an event fans out to): it runs again, and no longer sees the deleted row.
 */
const REFERENCED: Record<string, string | 'again'> = {
  contact_tags_contact_fk: 'contact',
  conversations_contact_fk: 'contact',
  contact_identities_contact_fk: 'contact',
  orders_contact_fk: 'contact',
  messages_conversation_fk: 'conversation',
  workflow_runs_workflow_fk: 'workflow',
  webhook_deliveries_endpoint_fk: 'again',
};

/** A 404 for a row a concurrent transaction deleted between this one's read of it and its write. */
export class ReferenceGone extends ApiError {}

/**
 * Runs `work` in one transaction, run again from the start (after a short jittered pause) when the
 * database reports a transient failure (Dialect.transientFailure: a deadlock, a serialization
 * failure, a unique key taken meanwhile on Postgres; a busy database on SQLite); every write of the
 * services and the idempotency module goes through it. A reference to a row that a concurrent
 * transaction deleted answers the contract's 404. Inside a transaction already, `work` joins it,
 * and the outermost transaction retries: a failed statement ends a Postgres transaction, so only
 * the outermost can run the work again.
 */
export async function runTransaction<T>(
  db: Kysely<Database>,
  dialect: Dialect,
  work: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  if (db.isTransaction) return work(db as Transaction<Database>);
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(work);
    } catch (error) {
      const missing = dialect.missingReference(error);
      const again =
        dialect.transientFailure(error) || (missing !== undefined && REFERENCED[missing.constraint] === 'again');
      if (again && attempt < TRANSACTION_ATTEMPTS) {
        await sleep(Math.random() * FIRST_BACKOFF_MS * 2 ** (attempt - 1));
        continue;
      }
      const resource = missing && REFERENCED[missing.constraint];
      if (missing && resource && resource !== 'again') {
        throw new ReferenceGone(
          'not_found',
          missing.id === undefined ? `No such ${resource}` : `No such ${resource}: ${missing.id}`,
        );
      }
      throw error;
    }
  }
}
