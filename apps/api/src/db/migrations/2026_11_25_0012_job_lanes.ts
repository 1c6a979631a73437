import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../dialect.js';

/**
 * Every job runs in a lane (repositories/jobs.ts): `endpoint:<id>` for a webhook delivery, whose
 * lane holds only so many jobs at once, `account:<id>` for an account's other jobs, `system`
 * otherwise. Claims step through the due jobs lane by lane (`jobs_lane_due_idx`) and count each
 * lane's running jobs (`jobs_lane_lease_idx`); the account index of 0011 they stepped through
 * before goes.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('jobs')
    .addColumn('lane', 'text', (c) => c.notNull().defaultTo('system'))
    .execute();
  await sql`update jobs set lane = 'account:' || account_id where account_id is not null`.execute(db);
  const deliveryId = isPostgres(db)
    ? sql`(jobs.payload::json ->> 'deliveryId')`
    : sql`json_extract(jobs.payload, '$.deliveryId')`;
  await sql`update jobs set lane = 'endpoint:' || d.endpoint_id from webhook_deliveries d
    where jobs.kind = 'deliver_webhook' and d.account_id = jobs.account_id and d.id = ${deliveryId}`.execute(db);
  await db.schema.createIndex('jobs_lane_due_idx').on('jobs').columns(['lane', 'run_at', 'id']).execute();
  await db.schema.createIndex('jobs_lane_lease_idx').on('jobs').columns(['lane', 'locked_until']).execute();
  await db.schema.dropIndex('jobs_account_due_idx').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('jobs_account_due_idx').on('jobs').columns(['account_id', 'run_at', 'id']).execute();
  await db.schema.dropIndex('jobs_lane_lease_idx').execute();
  await db.schema.dropIndex('jobs_lane_due_idx').execute();
  await db.schema.alterTable('jobs').dropColumn('lane').execute();
}
