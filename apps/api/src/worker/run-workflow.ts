import { SendMessageBody, type WorkflowRun, type WorkflowStep } from '@convo/core';
import type { DatabaseHandle } from '../db/database.js';
import { ApiError } from '../errors.js';
import { now } from '../ids.js';
import { type ContactRow, contactsRepository } from '../repositories/contacts.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { TenantScope } from '../repositories/tenant.js';
import { type WorkflowRunRow, workflowRunsRepository, workflowsRepository } from '../repositories/workflows.js';
import { contactsService } from '../services/contacts.js';
import { type ServiceContext, withinTransaction } from '../services/context.js';
import { conversationsService } from '../services/conversations.js';
import { messagesService } from '../services/messages.js';
import { asRunOf } from '../services/automations.js';
import { emitEvent } from '../services/events.js';
import { FINISHED_RUN_STATUSES, type StoredRunStep, toRun, toWorkflow } from '../services/workflows.js';
import type { Settings } from '../settings.js';
import { parseWith } from '../validation.js';
import type { JobContext, JobOutcome } from './worker.js';

/** What one transaction of the run did: go on with the next step, stop, or wait until a time. */
type Progress = { next: 'step' } | { next: 'stop' } | { next: 'wait'; until: string };
const NEXT_STEP: Progress = { next: 'step' };
const STOP: Progress = { next: 'stop' };

/** Why a step cannot be done (`no_open_conversation`, `transition`…), as its `error` shows it. */
class StepError extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** A step that failed. Thrown out of the step's transaction, so its effects roll back. */
class StepFailure extends Error {
  constructor(
    readonly index: number,
    readonly reason: string,
    /** The run's contact no longer exists although the run still names it. */
    readonly contactGone = false,
  ) {
    super(reason);
  }
}

const isFinished = (run: WorkflowRunRow) => FINISHED_RUN_STATUSES.includes(run.status);

/**
 * Runs the steps of a workflow run from its `current_step`. Each step commits in one transaction
 * with the run's progress (a crash neither repeats nor loses a step); a wait step makes the job
 * come back when the wait is over. A finished run is never touched again.
 */
export async function runWorkflow(deps: { database: DatabaseHandle; settings: Settings }, job: JobContext<'run_workflow'>): Promise<JobOutcome> {
  if (job.accountId === null) return;
  const ctx: ServiceContext = { database: deps.database, accountId: job.accountId, settings: deps.settings };
  const run = await workflowRunsRepository.findById(new TenantScope(deps.database.db, job.accountId), job.payload.runId);
  if (!run) return;
  // What the run changes emits events; they start no run of its own workflow (the loop guard).
  return asRunOf(run.workflow_id, async () => {
    for (;;) {
      const progress = await advance(ctx, job.payload.runId);
      if (progress.next === 'stop') return;
      if (progress.next === 'wait') return { retryAt: progress.until };
    }
  });
}

/** Takes the run one step further. */
async function advance(ctx: ServiceContext, runId: string): Promise<Progress> {
  try {
    return await ctx.database.db.transaction().execute(async (trx) => {
      const scope = new TenantScope(trx, ctx.accountId);
      // Lock order as in contactsService.delete (contact, then its runs), so the two never deadlock.
      const seen = await workflowRunsRepository.findById(scope, runId);
      if (!seen || isFinished(seen)) return STOP;
      const contact = seen.contact_id === null ? undefined : await contactsRepository.findByIdForUpdate(scope, seen.contact_id);
      const run = await workflowRunsRepository.findByIdForUpdate(scope, runId);
      if (!run || isFinished(run)) return STOP;
      // The contact was deleted in between: look again.
      if (run.contact_id !== seen.contact_id) return NEXT_STEP;

      // The steps the run started with; runs from before migration 0015 read the workflow's.
      const definition = run.definition === null ? await currentSteps(scope, run.workflow_id) : (JSON.parse(run.definition) as WorkflowStep[]);
      if (!definition) return STOP;
      const steps = JSON.parse(run.steps) as StoredRunStep[];
      const index = run.current_step;
      const at = now();
      const times = { started_at: run.started_at ?? at, updated_at: at };
      const step = definition[index];

      const finishStep = async (type: WorkflowStep['type']): Promise<Progress> => {
        steps[index] = { index, type, status: 'succeeded', error: null };
        const last = index + 1 >= definition.length;
        const patch = {
          ...times,
          steps: JSON.stringify(steps),
          current_step: index + 1,
          status: last ? ('succeeded' as const) : ('running' as const),
          ...(last ? { finished_at: at } : {}),
        };
        await workflowRunsRepository.update(scope, run.id, patch);
        if (last) await emitEvent(scope, 'workflow_run.succeeded', toRun({ ...run, ...patch }));
        return last ? STOP : NEXT_STEP;
      };

      if (!step) {
        const patch = { ...times, status: 'succeeded' as const, finished_at: at };
        await workflowRunsRepository.update(scope, run.id, patch);
        await emitEvent(scope, 'workflow_run.succeeded', toRun({ ...run, ...patch }));
        return STOP;
      }
      if (run.status === 'waiting') {
        const until = steps[index]?.resume_at;
        if (until !== undefined && until > at) return { next: 'wait', until };
        return finishStep(step.type);
      }
      if (!contact) throw new StepFailure(index, 'contact_deleted', run.contact_id !== null);
      if (step.type === 'wait') {
        const until = new Date(Date.parse(at) + step.seconds * 1000).toISOString();
        steps[index] = { index, type: step.type, status: 'running', error: null, resume_at: until };
        await workflowRunsRepository.update(scope, run.id, { ...times, status: 'waiting', steps: JSON.stringify(steps) });
        return { next: 'wait', until };
      }
      try {
        await performStep(withinTransaction(ctx, trx), scope, { contact, data: JSON.parse(run.data) as WorkflowRun['data'] }, step);
      } catch (error) {
        if (error instanceof ApiError) throw new StepFailure(index, error.message);
        if (error instanceof StepError) throw new StepFailure(index, error.reason);
        throw error;
      }
      return finishStep(step.type);
    });
  } catch (error) {
    if (!(error instanceof StepFailure)) throw error;
    await failRun(ctx, runId, error);
    return STOP;
  }
}

async function currentSteps(scope: TenantScope, workflowId: string): Promise<WorkflowStep[] | undefined> {
  const workflow = await workflowsRepository.findByIdIncludingDeleted(scope, workflowId);
  return workflow && toWorkflow(workflow).steps;
}

/** Does what the API would do for one step, in the caller's transaction. */
async function performStep(
  ctx: ServiceContext,
  scope: TenantScope,
  run: { contact: ContactRow; data: WorkflowRun['data'] },
  step: Exclude<WorkflowStep, { type: 'wait' }>,
): Promise<void> {
  const { contact } = run;
  switch (step.type) {
    case 'send_message': {
      const conversation = await conversationsRepository.findOpenForContact(scope, contact.id);
      if (!conversation) throw new StepError('no_open_conversation');
      const content = renderTemplate(step.content, { contactName: contact.name, data: run.data });
      await messagesService.send(ctx, parseWith(SendMessageBody, { conversation_id: conversation.id, content }));
      return;
    }
    case 'add_tag':
      await contactsService.addTag(ctx, contact.id, step.tag);
      return;
    case 'remove_tag':
      // The step wants the contact without the tag: already so is success.
      if (!(JSON.parse(contact.tags) as string[]).includes(step.tag)) return;
      await contactsService.removeTag(ctx, contact.id, step.tag);
      return;
    case 'set_conversation_status': {
      const conversation = await conversationsRepository.findOpenForContact(scope, contact.id);
      if (!conversation) throw new StepError('no_open_conversation');
      try {
        await conversationsService.update(ctx, conversation.id, { status: step.status });
      } catch (error) {
        if (error instanceof ApiError && error.details?.constraint === 'transition') throw new StepError('transition');
        throw error;
      }
      return;
    }
  }
}

/** Marks the step failed, the steps after it skipped and the run failed, unless it moved on meanwhile. */
async function failRun(ctx: ServiceContext, runId: string, failure: StepFailure): Promise<void> {
  await ctx.database.db.transaction().execute(async (trx) => {
    const scope = new TenantScope(trx, ctx.accountId);
    const run = await workflowRunsRepository.findByIdForUpdate(scope, runId);
    if (!run || isFinished(run) || run.current_step !== failure.index) return;
    const steps = (JSON.parse(run.steps) as StoredRunStep[]).map(({ index, type, status, error }): StoredRunStep => {
      if (index === failure.index) return { index, type, status: 'failed', error: failure.reason };
      if (index > failure.index) return { index, type, status: 'skipped', error: null };
      return { index, type, status, error };
    });
    const type = steps[failure.index]?.type ?? 'step';
    const at = now();
    const patch = {
      status: 'failed' as const,
      // `index` as in the run's steps (from 0), so a client finds the step it names.
      error: `step ${failure.index} (${type}): ${failure.reason}`,
      steps: JSON.stringify(steps),
      started_at: run.started_at ?? at,
      finished_at: at,
      updated_at: at,
      ...(failure.contactGone ? { contact_id: null } : {}),
    };
    await workflowRunsRepository.update(scope, run.id, patch);
    await emitEvent(scope, 'workflow_run.failed', toRun({ ...run, ...patch }));
  });
}

const PLACEHOLDER = /\{\{\s*(?:contact\.name|data\.([^{}]*?))\s*\}\}/g;

/**
 * Substitutes `{{contact.name}}` and `{{data.<key>}}` verbatim (no escaping); an absent name or
 * key renders as an empty string. Other text, including other braces, stays as written.
 */
export function renderTemplate(template: string, values: { contactName: string | null; data: WorkflowRun['data'] }): string {
  return template.replace(PLACEHOLDER, (_match, key: string | undefined) => {
    if (key === undefined) return values.contactName ?? '';
    const value = Object.hasOwn(values.data, key) ? values.data[key] : undefined;
    return value === undefined || value === null ? '' : String(value);
  });
}
