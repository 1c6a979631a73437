import type { Kysely } from 'kysely';

// Events (the transactional outbox), webhook endpoints and deliveries, the job queue of the
// worker, and workflows with their runs. Portable types only, as in the first migration.

export async function up(db: Kysely<any>): Promise<void> {
  // The last event sequence number used per conversation.
  await db.schema
    .alterTable('conversations')
    .addColumn('event_sequence', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable('events')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('conversation_id', 'text')
    .addColumn('sequence', 'integer')
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('events_pk', ['account_id', 'id'])
    .execute();
  await db.schema.createIndex('events_created_idx').on('events').columns(['account_id', 'created_at', 'id']).execute();
  await db.schema
    .createIndex('events_type_idx')
    .on('events')
    .columns(['account_id', 'type', 'created_at', 'id'])
    .execute();
  await db.schema.createIndex('events_prune_idx').on('events').column('created_at').execute();

  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('webhook_endpoints_pk', ['account_id', 'id'])
    .execute();
  await db.schema
    .createIndex('webhook_endpoints_created_idx')
    .on('webhook_endpoints')
    .columns(['account_id', 'created_at', 'id'])
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    /** JSON array of {at, status_code, duration_ms, error}, oldest first. */
    .addColumn('attempts', 'text', (c) => c.notNull())
    .addColumn('next_attempt_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('webhook_deliveries_pk', ['account_id', 'id'])
    .addForeignKeyConstraint(
      'webhook_deliveries_endpoint_fk',
      ['account_id', 'endpoint_id'],
      'webhook_endpoints',
      ['account_id', 'id'],
      (fk) => fk.onDelete('cascade'),
    )
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_endpoint_idx')
    .on('webhook_deliveries')
    .columns(['account_id', 'endpoint_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_status_idx')
    .on('webhook_deliveries')
    .columns(['account_id', 'endpoint_id', 'status', 'created_at', 'id'])
    .execute();

  // The worker's queue: deliveries, workflow steps. Not tenant data (the worker serves every account).
  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text')
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('run_at', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('locked_by', 'text')
    .addColumn('locked_until', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('jobs_due_idx').on('jobs').columns(['run_at', 'id']).execute();

  await db.schema
    .createTable('workflows')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('steps', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('workflows_pk', ['account_id', 'id'])
    .execute();
  await db.schema
    .createIndex('workflows_created_idx')
    .on('workflows')
    .columns(['account_id', 'created_at', 'id'])
    .execute();

  await db.schema
    .createTable('workflow_runs')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('workflow_id', 'text', (c) => c.notNull())
    .addColumn('contact_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    /** JSON array of {index, type, status, error}. */
    .addColumn('steps', 'text', (c) => c.notNull())
    /** Index of the next step to run. */
    .addColumn('current_step', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('finished_at', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('workflow_runs_pk', ['account_id', 'id'])
    .addForeignKeyConstraint(
      'workflow_runs_workflow_fk',
      ['account_id', 'workflow_id'],
      'workflows',
      ['account_id', 'id'],
      (fk) => fk.onDelete('cascade'),
    )
    .execute();
  await db.schema
    .createIndex('workflow_runs_workflow_idx')
    .on('workflow_runs')
    .columns(['account_id', 'workflow_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('workflow_runs_status_idx')
    .on('workflow_runs')
    .columns(['account_id', 'workflow_id', 'status', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('workflow_runs_contact_idx')
    .on('workflow_runs')
    .columns(['account_id', 'contact_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['workflow_runs', 'workflows', 'jobs', 'webhook_deliveries', 'webhook_endpoints', 'events']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
  await db.schema.alterTable('conversations').dropColumn('event_sequence').execute();
}
