import type { Kysely } from 'kysely';

/**
 * Fair claims (repositories/jobs.ts): each account's oldest due job is found by stepping through
 * the queue account by account, and each account's running jobs are counted, from these indexes
 * alone, without reading the whole queue.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('jobs_account_due_idx').on('jobs').columns(['account_id', 'run_at', 'id']).execute();
  await db.schema.createIndex('jobs_account_lease_idx').on('jobs').columns(['account_id', 'locked_until']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('jobs_account_lease_idx').execute();
  await db.schema.dropIndex('jobs_account_due_idx').execute();
}
