import type { Kysely } from 'kysely';

// The shared rate-limit counters (the layout rate-limiter-flexible's Postgres store uses; created
// here so that concurrent server starts never race to create it) and the idempotency keys.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('rate_limits')
    .addColumn('key', 'varchar(255)', (c) => c.primaryKey())
    .addColumn('points', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('expire', 'bigint')
    .execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    /** SHA-256 of the operation, path parameters, query and body bytes. */
    .addColumn('request_hash', 'text', (c) => c.notNull())
    /** `running` while the first request is in flight, then `done`. */
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['account_id', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_created_idx').on('idempotency_keys').column('created_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').ifExists().execute();
  await db.schema.dropTable('rate_limits').ifExists().execute();
}
