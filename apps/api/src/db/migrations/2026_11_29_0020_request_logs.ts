import type { Kysely } from 'kysely';

/**
 * The request log (the console's Logs, as Stripe's): each API request of an account's keys, written in batches off
 * the request path and pruned by the worker after `CONVO_REQUEST_LOG_DAYS`. A tenant table like the others; the
 * request id is not the key, since a client may send the same `X-Request-Id` twice.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('request_logs')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text')
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('query', 'text')
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    // Failed requests only, secrets redacted, at most 8 KB each.
    .addColumn('request_body', 'text')
    .addColumn('error_body', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('request_logs_pk', ['account_id', 'id'])
    .execute();
  await db.schema
    .createIndex('request_logs_request_idx')
    .on('request_logs')
    .columns(['account_id', 'request_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('request_logs').execute();
}
