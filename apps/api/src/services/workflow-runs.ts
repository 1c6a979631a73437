import { SendMessageBody, type WorkflowRun, type WorkflowStep } from '@convo/core';
import { apiKeysRepository } from '../repositories/accounts.js';
import { eventsRepository } from '../repositories/events.js';
import { ApiError } from '../errors.js';
import { now } from '../ids.js';
import { type ContactRow, contactsRepository } from '../repositories/contacts.js';
import { conversationsRepository } from '../repositories/conversations.js';
import type { TenantScope } from '../repositories/tenant.js';
import { type WorkflowRunRow, workflowRunsRepository, workflowsRepository } from '../repositories/workflows.js';
import { contactsService, toContact } from './contacts.js';
import { type ServiceContext, scopeOf, transaction } from './context.js';
import { conversationsService } from './conversations.js';
import { messagesService } from './messages.js';
import { asRunOf, holds } from './automations.js';
import { emitEvent, toEvent } from './events.js';
import { FINISHED_RUN_STATUSES, type StoredRunStep, planSteps, toRun, toWorkflow } from './workflows.js';
import { parseWith } from '../validation.js';
import { type WebhookResponse, postWebhook, standardWebhookHeaders } from './webhook-deliveries.js';

/** What Convo POSTs for an `http_request` step, and under which delivery id. */
interface StepRequest {
  index: number;
  url: string;
  body: string;
  deliveryId: string;
}

/**
 * What one transaction of the run did: go on with the next step, stop, wait until a time, or
 * make a step's HTTP request (outside any transaction) and then record its answer.
 */
type Progress =
  | { next: 'step' }
  | { next: 'stop' }
  | { next: 'wait'; until: string }
  | { next: 'request'; request: StepRequest };
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
    /** What else the failed step shows (an `http_request`'s response status). */
    readonly detail: Partial<StoredRunStep> = {},
  ) {
    super(reason);
  }
}

const isFinished = (run: WorkflowRunRow) => FINISHED_RUN_STATUSES.includes(run.status);

/**
 * Runs the steps of a workflow run from its `current_step`. Each step commits in one transaction
 * with the run's progress (a crash neither repeats nor loses a step); a wait step asks for the
 * worker's job to come back when the wait is over. A finished run is never touched again.
 */
export async function runWorkflow(
  ctx: ServiceContext,
  input: { runId: string },
): Promise<{ retryAt: string } | undefined> {
  const run = await workflowRunsRepository.findById(scopeOf(ctx), input.runId);
  if (!run) return;
  // What the run changes emits events; they start no run of its own workflow (the loop guard).
  return asRunOf(run.workflow_id, async () => {
    for (;;) {
      const progress = await advance(ctx, input.runId);
      if (progress.next === 'stop') return;
      if (progress.next === 'wait') return { retryAt: progress.until };
      if (progress.next === 'request')
        await recordAnswer(ctx, input.runId, progress.request.index, await post(ctx, progress.request));
    }
  });
}

/** Takes the run one step further. */
async function advance(ctx: ServiceContext, runId: string): Promise<Progress> {
  try {
    return await transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      // Lock order as in contactsService.delete (contact, then its runs), so the two never deadlock.
      const seen = await workflowRunsRepository.findById(scope, runId);
      if (!seen || isFinished(seen)) return STOP;
      const contact =
        seen.contact_id === null ? undefined : await contactsRepository.findByIdForUpdate(scope, seen.contact_id);
      const run = await workflowRunsRepository.findByIdForUpdate(scope, runId);
      if (!run || isFinished(run)) return STOP;
      // The contact was deleted in between: look again.
      if (run.contact_id !== seen.contact_id) return NEXT_STEP;

      // The steps the run started with; runs from before migration 0015 read the workflow's.
      const definition =
        run.definition === null
          ? await currentSteps(scope, run.workflow_id)
          : (JSON.parse(run.definition) as WorkflowStep[]);
      if (!definition) return STOP;
      const plan = planSteps(definition);
      const steps = JSON.parse(run.steps) as StoredRunStep[];
      const index = run.current_step;
      const planned = plan[index];

      if (!planned) return completeStep(scope, run, steps, index);
      const { step } = planned;
      if (run.status === 'waiting') {
        const until = steps[index]?.resume_at;
        if (until !== undefined && until > now()) return { next: 'wait', until };
        return completeStep(scope, run, steps, index);
      }
      if (!contact) throw new StepFailure(index, 'contact_deleted', run.contact_id !== null);
      const data = JSON.parse(run.data) as WorkflowRun['data'];
      const at = now();
      const times = { started_at: run.started_at ?? at, updated_at: at };
      switch (step.type) {
        case 'wait': {
          const until = new Date(Date.parse(at) + step.seconds * 1000).toISOString();
          steps[index] = { ...stepAt(steps, index, step.type), status: 'running', resume_at: until };
          await workflowRunsRepository.update(scope, run.id, {
            ...times,
            status: 'waiting',
            steps: JSON.stringify(steps),
          });
          return { next: 'wait', until };
        }
        case 'if': {
          const event = await triggeringEvent(scope, run);
          const context = {
            contact: toContact(contact),
            data,
            ...(event ? { event: JSON.parse(event.data) as unknown } : {}),
          };
          const branch = step.conditions.every((condition) => holds(condition, context)) ? 'then' : 'else';
          const [from, to] =
            branch === 'then'
              ? [planned.elseAt ?? index + 1, planned.end ?? index + 1]
              : [index + 1, planned.elseAt ?? index + 1];
          for (let skipped = from; skipped < to; skipped++)
            steps[skipped] = { ...stepAt(steps, skipped, plan[skipped]?.step.type ?? 'if'), status: 'skipped' };
          return completeStep(scope, run, steps, index, { branch });
        }
        case 'http_request': {
          // Recorded as running before the request, so that its answer is taken only while the run
          // is still at this step; after a crash the request is made again (at least once).
          steps[index] = { ...stepAt(steps, index, step.type), status: 'running', response_status: null };
          await workflowRunsRepository.update(scope, run.id, {
            ...times,
            status: 'running',
            steps: JSON.stringify(steps),
          });
          const event = await triggeringEvent(scope, run);
          const body = JSON.stringify({
            run_id: run.id,
            workflow_id: run.workflow_id,
            step: planned.path,
            contact: toContact(contact),
            data,
            event: event ? toEvent(event) : null,
          });
          return { next: 'request', request: { index, url: step.url, body, deliveryId: `${run.id}.${index}` } };
        }
        default:
          try {
            await performStep(tx, scope, { contact, data }, step);
          } catch (error) {
            if (error instanceof ApiError) throw new StepFailure(index, error.message);
            if (error instanceof StepError) throw new StepFailure(index, error.reason);
            throw error;
          }
          return completeStep(scope, run, steps, index);
      }
    });
  } catch (error) {
    if (!(error instanceof StepFailure)) throw error;
    await failRun(ctx, runId, error);
    return STOP;
  }
}

/** The event whose trigger started the run, while it is kept (30 days). */
const triggeringEvent = async (scope: TenantScope, run: WorkflowRunRow) =>
  run.event_id === null ? undefined : eventsRepository.findById(scope, run.event_id);

/** The stored step at `index`, or a fresh one for runs that stored fewer. */
const stepAt = (steps: StoredRunStep[], index: number, type: WorkflowStep['type']): StoredRunStep => {
  const { resume_at: _resumeAt, ...step } = steps[index] ?? { index, type, status: 'pending', error: null };
  return step;
};

/**
 * Marks the step at `index` succeeded and moves the run to the next pending step, or finishes it
 * (`workflow_run.succeeded`) when none is left. In the caller's transaction, with the run locked.
 */
async function completeStep(
  scope: TenantScope,
  run: WorkflowRunRow,
  steps: StoredRunStep[],
  index: number,
  detail: Partial<StoredRunStep> = {},
): Promise<Progress> {
  const at = now();
  const current = steps[index];
  if (current) steps[index] = { ...stepAt(steps, index, current.type), status: 'succeeded', error: null, ...detail };
  const next = steps.findIndex((step, position) => position > index && step.status === 'pending');
  const last = next === -1;
  const patch = {
    started_at: run.started_at ?? at,
    updated_at: at,
    steps: JSON.stringify(steps),
    current_step: last ? Math.max(index + 1, steps.length) : next,
    status: last ? ('succeeded' as const) : ('running' as const),
    ...(last ? { finished_at: at } : {}),
  };
  await workflowRunsRepository.update(scope, run.id, patch);
  if (last) await emitEvent(scope, 'workflow_run.succeeded', toRun({ ...run, ...patch }));
  return last ? STOP : NEXT_STEP;
}

/** Makes an `http_request` step's POST: signed like a webhook when the account has a webhook key. */
async function post(ctx: ServiceContext, request: StepRequest): Promise<WebhookResponse> {
  const secrets = await apiKeysRepository.signingSecrets(ctx.database.db, ctx.accountId);
  return postWebhook({
    url: request.url,
    body: request.body,
    headers: standardWebhookHeaders({
      id: request.deliveryId,
      body: request.body,
      secrets,
      userAgent: WORKFLOW_USER_AGENT,
    }),
    timeoutMs: ctx.settings.webhookTimeoutMs,
    allowPrivate: ctx.settings.allowPrivateWebhooks,
  });
}

export const WORKFLOW_USER_AGENT = 'Convo-Workflows/1';

/**
 * Records the answer to an `http_request` step: a 2xx completes it, anything else fails the run.
 * Taken only while the run is still at that step (not cancelled or deleted meanwhile).
 */
async function recordAnswer(
  ctx: ServiceContext,
  runId: string,
  index: number,
  response: WebhookResponse,
): Promise<void> {
  try {
    await transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const run = await workflowRunsRepository.findByIdForUpdate(scope, runId);
      if (!run || isFinished(run) || run.current_step !== index) return;
      const detail = { response_status: response.statusCode };
      if (response.error !== null) throw new StepFailure(index, response.error, false, detail);
      await completeStep(scope, run, JSON.parse(run.steps) as StoredRunStep[], index, detail);
    });
  } catch (error) {
    if (!(error instanceof StepFailure)) throw error;
    await failRun(ctx, runId, error);
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
  step: Exclude<WorkflowStep, { type: 'wait' | 'if' | 'http_request' }>,
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
      await contactsService.addTag(ctx, { id: contact.id, tag: step.tag });
      return;
    case 'remove_tag':
      // The step wants the contact without the tag: already so is success.
      if (!(JSON.parse(contact.tags) as string[]).includes(step.tag)) return;
      await contactsService.removeTag(ctx, { id: contact.id, tag: step.tag });
      return;
    case 'set_conversation_status': {
      const conversation = await conversationsRepository.findOpenForContact(scope, contact.id);
      if (!conversation) throw new StepError('no_open_conversation');
      try {
        await conversationsService.update(ctx, { id: conversation.id, body: { status: step.status } });
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
  await transaction(ctx, async (tx) => {
    const scope = scopeOf(tx);
    const run = await workflowRunsRepository.findByIdForUpdate(scope, runId);
    if (!run || isFinished(run) || run.current_step !== failure.index) return;
    const steps = (JSON.parse(run.steps) as StoredRunStep[]).map(({ resume_at: _resumeAt, ...step }): StoredRunStep => {
      if (step.index === failure.index) return { ...step, status: 'failed', error: failure.reason, ...failure.detail };
      if (step.index > failure.index && step.status === 'pending') return { ...step, status: 'skipped', error: null };
      return step;
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
export function renderTemplate(
  template: string,
  values: { contactName: string | null; data: WorkflowRun['data'] },
): string {
  return template.replace(PLACEHOLDER, (_match, key: string | undefined) => {
    if (key === undefined) return values.contactName ?? '';
    const value = Object.hasOwn(values.data, key) ? values.data[key] : undefined;
    return value === undefined || value === null ? '' : String(value);
  });
}
