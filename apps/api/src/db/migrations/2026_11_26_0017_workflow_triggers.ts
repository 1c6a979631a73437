import { type Kysely, sql } from 'kysely';

/**
 * Workflows that start by themselves (`trigger`: an event type and conditions; `trigger_event`
 * repeats its type for the lookup at every event), and the event a run was started by: unique
 * per workflow, so that one event starts at most one run of each workflow.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('workflows').addColumn('trigger', 'text').execute();
  await db.schema.alterTable('workflows').addColumn('trigger_event', 'text').execute();
  await db.schema
    .createIndex('workflows_trigger_idx')
    .on('workflows')
    .columns(['account_id', 'trigger_event'])
    .where(sql.ref('trigger_event'), 'is not', null)
    .execute();
  await db.schema.alterTable('workflow_runs').addColumn('event_id', 'text').execute();
  await db.schema
    .createIndex('workflow_runs_event_unique')
    .on('workflow_runs')
    .columns(['account_id', 'workflow_id', 'event_id'])
    .unique()
    .where(sql.ref('event_id'), 'is not', null)
    .execute();
  // The runs an account's triggers started lately, counted against its per-minute cap.
  await db.schema
    .createIndex('workflow_runs_triggered_idx')
    .on('workflow_runs')
    .columns(['account_id', 'created_at'])
    .where(sql.ref('event_id'), 'is not', null)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('workflow_runs_triggered_idx').execute();
  await db.schema.dropIndex('workflow_runs_event_unique').execute();
  await db.schema.alterTable('workflow_runs').dropColumn('event_id').execute();
  await db.schema.dropIndex('workflows_trigger_idx').execute();
  await db.schema.alterTable('workflows').dropColumn('trigger_event').execute();
  await db.schema.alterTable('workflows').dropColumn('trigger').execute();
}
