import { type Kysely, sql } from 'kysely';

/**
 * Workflows that change: `enabled` (1 or 0) and `deleted_at` (a deleted workflow's runs stay, so
 * its row stays too, out of the lists), and each run's own copy of the steps it was started with
 * (`definition`), so that editing a workflow changes its next runs and never one under way.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('workflows')
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema.alterTable('workflows').addColumn('deleted_at', 'text').execute();
  await db.schema.alterTable('workflow_runs').addColumn('definition', 'text').execute();
  await sql`update workflow_runs set definition = (
    select w.steps from workflows w where w.account_id = workflow_runs.account_id and w.id = workflow_runs.workflow_id
  )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('workflow_runs').dropColumn('definition').execute();
  await db.schema.alterTable('workflows').dropColumn('deleted_at').execute();
  await db.schema.alterTable('workflows').dropColumn('enabled').execute();
}
