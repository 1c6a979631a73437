import type { Kysely } from 'kysely';

/**
 * Fair claiming (repositories/jobs.ts): a job may name a lane (a webhook endpoint's deliveries),
 * and the worker counts the jobs running per account and per lane, which these indexes find
 * without reading the queue.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('lane', 'text').execute();
  await db.schema.createIndex('jobs_account_lease_idx').on('jobs').columns(['account_id', 'locked_until']).execute();
  await db.schema.createIndex('jobs_lane_lease_idx').on('jobs').columns(['lane', 'locked_until']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('jobs_lane_lease_idx').execute();
  await db.schema.dropIndex('jobs_account_lease_idx').execute();
  await db.schema.alterTable('jobs').dropColumn('lane').execute();
}
