import { type Workflow, type WorkflowRun, type WorkflowStep, forEachStep } from '@convo/core';
import type {
  CreateWorkflowBody,
  ListRunsQuery,
  ListWorkflowsQuery,
  TriggerWorkflowBody,
  UpdateWorkflowBody,
} from '@convo/core';
import type * as z from 'zod';
import { ApiError } from '../errors.js';
import { newId, now } from '../ids.js';
import { contactsRepository } from '../repositories/contacts.js';
import type { TenantScope } from '../repositories/tenant.js';
import {
  type WorkflowRow,
  type WorkflowRunRow,
  workflowRunsRepository,
  workflowsRepository,
} from '../repositories/workflows.js';
import { webhookUrlProblem } from '../webhook-addresses.js';
import { enqueue } from '../repositories/jobs.js';
import { type Change, type ServiceContext, transaction, page, scopeOf } from './context.js';

/**
 * A run's step as stored: the public fields, and for a wait step that has started, when the
 * run may go on (kept with the step so that a job that runs early, after a crash, waits again).
 */
export type StoredRunStep = WorkflowRun['steps'][number] & { resume_at?: string };

/**
 * One step of a run's plan: the workflow's steps in one flat list, each `if` followed by its
 * `then` steps and then its `else` steps. A run moves through the list, and an `if` marks the
 * branch it does not take `skipped`, so the next step is always the next `pending` one (a wait
 * inside a branch stops the run at its place in the list, like any other).
 */
export interface PlannedStep {
  step: WorkflowStep;
  path: string;
  /** An `if` only: where its `else` steps start, and where the steps after it start. */
  elseAt?: number;
  end?: number;
}

export function planSteps(
  steps: readonly WorkflowStep[],
  path: string[] = [],
  plan: PlannedStep[] = [],
): PlannedStep[] {
  steps.forEach((step, index) => {
    const here = [...path, String(index)];
    const planned: PlannedStep = { step, path: here.join('.') };
    plan.push(planned);
    if (step.type === 'if') {
      planSteps(step.then, [...here, 'then'], plan);
      planned.elseAt = plan.length;
      planSteps(step.else ?? [], [...here, 'else'], plan);
      planned.end = plan.length;
    }
  });
  return plan;
}

/** A run's step as the API shows it. */
const publicStep = ({ resume_at: _resumeAt, ...step }: StoredRunStep): WorkflowRun['steps'][number] => step;

export const toWorkflow = (row: WorkflowRow): Workflow => ({
  id: row.id,
  name: row.name,
  steps: JSON.parse(row.steps) as WorkflowStep[],
  enabled: row.enabled === 1,
  trigger: row.trigger === null ? null : (JSON.parse(row.trigger) as Workflow['trigger']),
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** The statuses of a run that is over: nothing changes it any more. */
export const FINISHED_RUN_STATUSES: readonly WorkflowRun['status'][] = ['succeeded', 'failed', 'cancelled', 'skipped'];

/** The trigger as stored: its JSON, and its event type again for the lookup. */
const triggerColumns = (trigger: Workflow['trigger'] | undefined) =>
  trigger === undefined
    ? {}
    : { trigger: trigger === null ? null : JSON.stringify(trigger), trigger_event: trigger?.event ?? null };

/**
 * Records a run of `workflow` for `contactId` with its own copy of the steps: queued with the job
 * that executes it, or, with `skipped`, finished at once with that reason and no job.
 */
export async function startRun(
  scope: TenantScope,
  workflow: WorkflowRow,
  input: { contactId: string; data: WorkflowRun['data']; eventId?: string; skipped?: string },
): Promise<WorkflowRun> {
  const at = now();
  const plan = planSteps(toWorkflow(workflow).steps);
  // A step's place in the list is its place in the workflow unless `if` steps nest others.
  const nested = plan.some(({ step }) => step.type === 'if');
  const steps: StoredRunStep[] = plan.map(({ step, path }, index) => ({
    index,
    ...(nested ? { path } : {}),
    type: step.type,
    status: input.skipped === undefined ? 'pending' : 'skipped',
    error: null,
    ...(step.type === 'if' ? { branch: null } : {}),
    ...(step.type === 'http_request' ? { response_status: null } : {}),
  }));
  const row: Omit<WorkflowRunRow, 'account_id'> = {
    id: newId('workflowRun'),
    workflow_id: workflow.id,
    contact_id: input.contactId,
    event_id: input.eventId ?? null,
    status: input.skipped === undefined ? 'queued' : 'skipped',
    data: JSON.stringify(input.data),
    definition: workflow.steps,
    steps: JSON.stringify(steps),
    current_step: 0,
    error: input.skipped ?? null,
    created_at: at,
    started_at: null,
    finished_at: input.skipped === undefined ? null : at,
    updated_at: at,
  };
  await workflowRunsRepository.insert(scope, row);
  if (input.skipped === undefined)
    await enqueue(scope.db, { kind: 'run_workflow', accountId: scope.accountId, payload: { runId: row.id } });
  return toRun({ ...row, account_id: scope.accountId });
}

/** The run as cancelled at `at`: the steps not done yet skipped. */
function cancelled(run: WorkflowRunRow, at: string) {
  const steps = (JSON.parse(run.steps) as StoredRunStep[]).map(
    (step): StoredRunStep => ({
      ...publicStep(step),
      status: step.status === 'succeeded' || step.status === 'failed' ? step.status : 'skipped',
    }),
  );
  return { status: 'cancelled' as const, steps: JSON.stringify(steps), finished_at: at, updated_at: at };
}

export const toRun = (row: WorkflowRunRow): WorkflowRun => ({
  id: row.id,
  workflow_id: row.workflow_id,
  contact_id: row.contact_id,
  event_id: row.event_id,
  status: row.status,
  data: JSON.parse(row.data) as WorkflowRun['data'],
  steps: (JSON.parse(row.steps) as StoredRunStep[]).map(publicStep),
  error: row.error,
  created_at: row.created_at,
  started_at: row.started_at,
  finished_at: row.finished_at,
});

/** Every `http_request` step's URL under the webhook rules (a 400 on the step's `url` otherwise). */
async function assertRequestableUrls(ctx: ServiceContext, steps: readonly WorkflowStep[] | undefined): Promise<void> {
  const urls: { field: string; url: string }[] = [];
  forEachStep(steps ?? [], (step, path) => {
    if (step.type === 'http_request') urls.push({ field: ['steps', ...path, 'url'].join('.'), url: step.url });
  });
  for (const { field, url } of urls) {
    const problem = await webhookUrlProblem(url, { allowPrivate: ctx.settings.allowPrivateWebhooks });
    if (problem) throw ApiError.badRequest(field, 'format', problem);
  }
}

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
    await assertRequestableUrls(ctx, body.steps);
    const at = now();
    const row = {
      id: newId('workflow'),
      name: body.name,
      steps: JSON.stringify(body.steps),
      enabled: body.enabled ? 1 : 0,
      deleted_at: null,
      trigger: null,
      trigger_event: null,
      ...triggerColumns(body.trigger),
      created_at: at,
      updated_at: at,
    };
    await transaction(ctx, (tx) => workflowsRepository.insert(scopeOf(tx), row));
    return toWorkflow({ ...row, account_id: ctx.accountId });
  },

  /** Changes what is given; runs already started keep their own copy of the steps. */
  async update(ctx: ServiceContext, { id, body }: Change<typeof UpdateWorkflowBody>): Promise<Workflow> {
    await assertRequestableUrls(ctx, body.steps);
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const current = await workflowsRepository.findByIdForUpdate(scope, id);
      if (!current) throw ApiError.notFound('workflow', id);
      const patch = {
        ...(body.name === undefined ? {} : { name: body.name }),
        ...(body.steps === undefined ? {} : { steps: JSON.stringify(body.steps) }),
        ...(body.enabled === undefined ? {} : { enabled: body.enabled ? 1 : 0 }),
        ...triggerColumns(body.trigger),
      };
      if (Object.keys(patch).length === 0) return toWorkflow(current);
      const updated = { ...current, ...patch, updated_at: now() };
      await workflowsRepository.update(scope, id, { ...patch, updated_at: updated.updated_at });
      return toWorkflow(updated);
    });
  },

  /** Takes the workflow out of every list and lookup and cancels its unfinished runs; the runs stay. */
  async delete(ctx: ServiceContext, id: string): Promise<void> {
    await transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const current = await workflowsRepository.findByIdForUpdate(scope, id);
      if (!current) throw ApiError.notFound('workflow', id);
      const at = now();
      await workflowsRepository.update(scope, id, { deleted_at: at, enabled: 0, updated_at: at });
      for (const run of await workflowRunsRepository.unfinishedOfWorkflow(scope, id)) {
        await workflowRunsRepository.update(scope, run.id, cancelled(run, at));
      }
    });
  },

  /** Records a queued run and the job that executes it, in one transaction. */
  async trigger(
    ctx: ServiceContext,
    { workflowId, body }: { workflowId: string; body: z.output<typeof TriggerWorkflowBody> },
  ): Promise<WorkflowRun> {
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const workflow = await findWorkflowOrThrow(scope, workflowId);
      if (workflow.enabled !== 1)
        throw ApiError.badRequest(
          'enabled',
          'transition',
          'This workflow is disabled: enable it (PATCH enabled: true) to start runs',
        );
      // Locked so that a concurrent delete of the contact waits for this run and then detaches it.
      const contact = await contactsRepository.findByIdForUpdate(scope, body.contact_id);
      if (!contact) throw ApiError.notFound('contact', body.contact_id);
      return startRun(scope, workflow, { contactId: contact.id, data: body.data ?? {} });
    });
  },

  async listRuns(
    ctx: ServiceContext,
    { workflowId, query }: { workflowId: string; query: z.output<typeof ListRunsQuery> },
  ) {
    const scope = scopeOf(ctx);
    if (!(await workflowsRepository.findByIdIncludingDeleted(scope, workflowId)))
      throw ApiError.notFound('workflow', workflowId);
    const { rows, total } = await workflowRunsRepository.list(scope, { workflowId, status: query.status }, query);
    return page(rows.map(toRun), total, query.limit, query.offset);
  },

  async retrieveRun(
    ctx: ServiceContext,
    { workflowId, runId }: { workflowId: string; runId: string },
  ): Promise<WorkflowRun> {
    const run = await workflowRunsRepository.findById(scopeOf(ctx), runId);
    if (!run || run.workflow_id !== workflowId) throw ApiError.notFound('workflow run', runId);
    return toRun(run);
  },

  /** A run still queued or waiting ends `cancelled`; its job finds it finished and stops. */
  async cancelRun(
    ctx: ServiceContext,
    { workflowId, runId }: { workflowId: string; runId: string },
  ): Promise<WorkflowRun> {
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const run = await workflowRunsRepository.findByIdForUpdate(scope, runId);
      if (!run || run.workflow_id !== workflowId) throw ApiError.notFound('workflow run', runId);
      if (run.status !== 'queued' && run.status !== 'waiting') {
        throw ApiError.badRequest(
          'run_id',
          'transition',
          `A ${run.status} run cannot be cancelled (only a queued or waiting one)`,
        );
      }
      const patch = cancelled(run, now());
      await workflowRunsRepository.update(scope, run.id, patch);
      return toRun({ ...run, ...patch });
    });
  },
};
