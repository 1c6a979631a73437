import type { Selectable, Updateable } from 'kysely';
import { lockedForUpdate } from '../db/dialect.js';
import type { WorkflowRunTable, WorkflowTable } from '../db/schema.js';
import { type TenantScope, withTotal } from './tenant.js';

export type WorkflowRow = Selectable<WorkflowTable>;
export type WorkflowRunRow = Selectable<WorkflowRunTable>;

export const workflowsRepository = {
  /** The workflow unless it was deleted. */
  findById: (scope: TenantScope, id: string) =>
    scope
      .selectFrom('workflows')
      .selectAll()
      .where('workflows.id', '=', id)
      .where('workflows.deleted_at', 'is', null)
      .executeTakeFirst(),

  /** The workflow, deleted or not: its runs stay readable. */
  findByIdIncludingDeleted: (scope: TenantScope, id: string) =>
    scope.selectFrom('workflows').selectAll().where('workflows.id', '=', id).executeTakeFirst(),

  /** The workflow unless it was deleted, held until the transaction ends (Postgres). */
  findByIdForUpdate: (scope: TenantScope, id: string) =>
    lockedForUpdate(
      scope.dialect,
      scope
        .selectFrom('workflows')
        .selectAll()
        .where('workflows.id', '=', id)
        .where('workflows.deleted_at', 'is', null),
    ).executeTakeFirst(),

  /** The enabled workflows whose trigger is this event type. */
  listTriggeredBy: (scope: TenantScope, eventType: string) =>
    scope
      .selectFrom('workflows')
      .selectAll()
      .where('workflows.trigger_event', '=', eventType)
      .where('workflows.enabled', '=', 1)
      .where('workflows.deleted_at', 'is', null)
      .orderBy('workflows.created_at')
      .orderBy('workflows.id')
      .execute(),

  update: (scope: TenantScope, id: string, patch: Updateable<WorkflowTable>) =>
    scope.updateTable('workflows').set(patch).where('workflows.id', '=', id).execute(),

  /** Newest first, ties by id descending. */
  async list(scope: TenantScope, page: { limit: number; offset: number }) {
    const live = scope.selectFrom('workflows').where('workflows.deleted_at', 'is', null);
    const rows = live
      .selectAll()
      .orderBy('workflows.created_at', 'desc')
      .orderBy('workflows.id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    return withTotal(rows, live);
  },

  insert: (scope: TenantScope, row: Omit<WorkflowRow, 'account_id'>) => scope.insert('workflows', row),
};

export interface RunFilter {
  workflowId: string;
  status?: WorkflowRunRow['status'] | undefined;
}

const filteredRuns = (scope: TenantScope, filter: RunFilter) => {
  let query = scope.selectFrom('workflow_runs').where('workflow_runs.workflow_id', '=', filter.workflowId);
  if (filter.status) query = query.where('workflow_runs.status', '=', filter.status);
  return query;
};

export const workflowRunsRepository = {
  findById: (scope: TenantScope, id: string) =>
    scope.selectFrom('workflow_runs').selectAll().where('workflow_runs.id', '=', id).executeTakeFirst(),

  /**
   * The run, its row locked until the transaction ends: the worker advances a run only while
   * holding it, so two workers that both hold its job never run the same step twice.
   */
  findByIdForUpdate: (scope: TenantScope, id: string) =>
    lockedForUpdate(
      scope.dialect,
      scope.selectFrom('workflow_runs').selectAll().where('workflow_runs.id', '=', id),
    ).executeTakeFirst(),

  /** Newest first, ties by id descending. */
  async list(scope: TenantScope, filter: RunFilter, page: { limit: number; offset: number }) {
    const rows = filteredRuns(scope, filter)
      .selectAll()
      .orderBy('workflow_runs.created_at', 'desc')
      .orderBy('workflow_runs.id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    return withTotal(rows, filteredRuns(scope, filter));
  },

  insert: (scope: TenantScope, row: Omit<WorkflowRunRow, 'account_id'>) => scope.insert('workflow_runs', row),

  update: (scope: TenantScope, id: string, patch: Updateable<WorkflowRunTable>) =>
    scope.updateTable('workflow_runs').set(patch).where('workflow_runs.id', '=', id).execute(),

  /** The runs of a workflow not finished yet, locked (Postgres) so that the worker and a cancel take turns. */
  unfinishedOfWorkflow: (scope: TenantScope, workflowId: string) =>
    lockedForUpdate(
      scope.dialect,
      scope
        .selectFrom('workflow_runs')
        .selectAll()
        .where('workflow_runs.workflow_id', '=', workflowId)
        .where('workflow_runs.status', 'in', ['queued', 'running', 'waiting']),
    ).execute(),

  /** Runs the account's triggers started since `since`. */
  countTriggeredSince: async (scope: TenantScope, since: string) =>
    Number(
      (
        await scope
          .selectFrom('workflow_runs')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('workflow_runs.event_id', 'is not', null)
          .where('workflow_runs.created_at', '>=', since)
          .executeTakeFirstOrThrow()
      ).n,
    ),

  /** Runs outlive their contact: they keep everything else, with contact_id null. */
  detachContact: (scope: TenantScope, contactId: string, at: string) =>
    scope
      .updateTable('workflow_runs')
      .set({ contact_id: null, updated_at: at })
      .where('workflow_runs.contact_id', '=', contactId)
      .execute(),
};
