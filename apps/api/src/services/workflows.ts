import type { Workflow, WorkflowRun, WorkflowStep } from '@convo/core';
import type { CreateWorkflowBody, ListRunsQuery, ListWorkflowsQuery, TriggerWorkflowBody } from '@convo/core';
import type * as z from 'zod';
import { ApiError } from '../errors.js';
import { newId, now } from '../ids.js';
import { contactsRepository } from '../repositories/contacts.js';
import type { TenantScope } from '../repositories/tenant.js';
import { type WorkflowRow, type WorkflowRunRow, workflowRunsRepository, workflowsRepository } from '../repositories/workflows.js';
import { enqueue } from '../worker/queue.js';
import { type ServiceContext, inTransaction, page, scopeOf } from './context.js';

/**
 * A run's step as stored: the public fields, and for a wait step that has started, when the
 * run may go on (kept with the step so that a job that runs early, after a crash, waits again).
 */
export type StoredRunStep = WorkflowRun['steps'][number] & { resume_at?: string };

export const toWorkflow = (row: WorkflowRow): Workflow => ({
  id: row.id,
  name: row.name,
  steps: JSON.parse(row.steps) as WorkflowStep[],
  created_at: row.created_at,
  updated_at: row.updated_at,
});

export const toRun = (row: WorkflowRunRow): WorkflowRun => ({
  id: row.id,
  workflow_id: row.workflow_id,
  contact_id: row.contact_id,
  status: row.status,
  data: JSON.parse(row.data) as WorkflowRun['data'],
  steps: (JSON.parse(row.steps) as StoredRunStep[]).map(({ index, type, status, error }) => ({ index, type, status, error })),
  error: row.error,
  created_at: row.created_at,
  started_at: row.started_at,
  finished_at: row.finished_at,
});

export async function findWorkflowOrThrow(scope: TenantScope, id: string): Promise<WorkflowRow> {
  const row = await workflowsRepository.findById(scope, id);
  if (!row) throw ApiError.notFound('workflow', id);
  return row;
}

export const workflowsService = {
  async list(ctx: ServiceContext, query: z.output<typeof ListWorkflowsQuery>) {
    const { rows, total } = await workflowsRepository.list(scopeOf(ctx), query);
    return page(rows.map(toWorkflow), total, query.limit, query.offset);
  },

  async retrieve(ctx: ServiceContext, id: string): Promise<Workflow> {
    return toWorkflow(await findWorkflowOrThrow(scopeOf(ctx), id));
  },

  async create(ctx: ServiceContext, body: z.output<typeof CreateWorkflowBody>): Promise<Workflow> {
    const at = now();
    const row = { id: newId('workflow'), name: body.name, steps: JSON.stringify(body.steps), created_at: at, updated_at: at };
    await inTransaction(ctx, (scope) => workflowsRepository.insert(scope, row));
    return toWorkflow({ ...row, account_id: ctx.accountId });
  },

  /** Records a queued run and the job that executes it, in one transaction. */
  async trigger(ctx: ServiceContext, workflowId: string, body: z.output<typeof TriggerWorkflowBody>): Promise<WorkflowRun> {
    return inTransaction(ctx, async (scope) => {
      const workflow = await findWorkflowOrThrow(scope, workflowId);
      // Locked so that a concurrent delete of the contact waits for this run and then detaches it.
      const contact = await contactsRepository.findByIdForUpdate(scope, body.contact_id);
      if (!contact) throw ApiError.notFound('contact', body.contact_id);
      const steps: StoredRunStep[] = toWorkflow(workflow).steps.map((step, index) => ({ index, type: step.type, status: 'pending', error: null }));
      const at = now();
      const row: Omit<WorkflowRunRow, 'account_id'> = {
        id: newId('workflowRun'),
        workflow_id: workflow.id,
        contact_id: contact.id,
        status: 'queued',
        data: JSON.stringify(body.data ?? {}),
        steps: JSON.stringify(steps),
        current_step: 0,
        error: null,
        created_at: at,
        started_at: null,
        finished_at: null,
        updated_at: at,
      };
      await workflowRunsRepository.insert(scope, row);
      await enqueue(scope.db, { kind: 'run_workflow', accountId: ctx.accountId, payload: { runId: row.id } });
      return toRun({ ...row, account_id: ctx.accountId });
    });
  },

  async listRuns(ctx: ServiceContext, workflowId: string, query: z.output<typeof ListRunsQuery>) {
    const scope = scopeOf(ctx);
    await findWorkflowOrThrow(scope, workflowId);
    const { rows, total } = await workflowRunsRepository.list(scope, { workflowId, status: query.status }, query);
    return page(rows.map(toRun), total, query.limit, query.offset);
  },
};
