import { AsyncLocalStorage } from 'node:async_hooks';
import type { EventType, WorkflowCondition, WorkflowTrigger } from '@convo/core';
import { accountsRepository } from '../repositories/accounts.js';
import { conversationsRepository } from '../repositories/conversations.js';
import type { TenantScope } from '../repositories/tenant.js';
import { type WorkflowRow, workflowRunsRepository, workflowsRepository } from '../repositories/workflows.js';
import { rateLimitOf } from './accounts.js';
import { startRun } from './workflows.js';

/**
 * Workflows that start by themselves (CONTRACT-style decisions in the README, "Automations"):
 * when an event is recorded, every enabled workflow whose trigger names its type and whose
 * conditions hold for its data gets a run for the event's contact, in the same transaction as the
 * event (a rolled-back change starts nothing; one event starts at most one run of a workflow).
 */

/** The workflow whose run is making the current change: its own events do not start it again. */
const runningWorkflow = new AsyncLocalStorage<string>();

/** Runs `work` as a step of a run of `workflowId` (workflow-runs.ts): the loop guard's context. */
export const asRunOf = <T>(workflowId: string, work: () => Promise<T>): Promise<T> =>
  runningWorkflow.run(workflowId, work);

/** Starts the runs these events trigger. Called by emitEvents, in the events' transaction. */
export async function startTriggeredRuns(
  scope: TenantScope,
  events: readonly { id: string; type: EventType; data: unknown }[],
): Promise<void> {
  const triggeredBy = new Map<EventType, WorkflowRow[]>();
  for (const event of events) {
    const workflows = triggeredBy.get(event.type) ?? (await workflowsRepository.listTriggeredBy(scope, event.type));
    triggeredBy.set(event.type, workflows);
    if (workflows.length > 0) await startRunsOf(scope, workflows, event);
  }
}

async function startRunsOf(
  scope: TenantScope,
  workflows: WorkflowRow[],
  event: { id: string; type: EventType; data: unknown },
): Promise<void> {
  const origin = runningWorkflow.getStore();
  const data = event.data as Record<string, unknown>;
  let contactId: string | null | undefined;
  let cap: number | undefined;
  for (const workflow of workflows) {
    if (workflow.id === origin) continue;
    const trigger = JSON.parse(workflow.trigger as string) as WorkflowTrigger;
    if (!trigger.conditions.every((condition) => holds(condition, data))) continue;
    contactId ??= await contactOf(scope, event.type, data);
    if (!contactId) return;
    cap ??= await runsPerMinute(scope);
    const skipped = (await overCap(scope, cap))
      ? `rate_limited: the account's workflow triggers started their runs for this minute`
      : undefined;
    await startRun(scope, workflow, { contactId, data: {}, eventId: event.id, ...(skipped ? { skipped } : {}) });
  }
}

/** The contact an event concerns, whatever the resource it carries. */
async function contactOf(scope: TenantScope, type: EventType, data: Record<string, unknown>): Promise<string | null> {
  if (type.startsWith('contact.')) return data.id as string;
  if (type.startsWith('conversation.'))
    return ((data.contact as { id?: string } | undefined)?.id ?? null) as string | null;
  if (type.startsWith('message.'))
    return (await conversationsRepository.findById(scope, data.conversation_id as string))?.contact_id ?? null;
  return (data.contact_id as string | null | undefined) ?? null;
}

/** Runs started by triggers a minute per account: its API rate limit (its plan's requests a minute). */
async function runsPerMinute(scope: TenantScope): Promise<number> {
  const account = await accountsRepository.findById(scope.db, scope.accountId);
  return account ? rateLimitOf(account) : 60;
}

/** The account's triggers started `cap` runs or more in the last minute (counted anew: each start adds one). */
async function overCap(scope: TenantScope, cap: number): Promise<boolean> {
  const since = new Date(Date.now() - 60_000).toISOString();
  return (await workflowRunsRepository.countTriggeredSince(scope, since)) >= cap;
}

/** A condition on the event's data; a field that is absent is `undefined`. */
export function holds(condition: WorkflowCondition, data: Record<string, unknown>): boolean {
  const actual = condition.field
    .split('.')
    .reduce<unknown>(
      (value, key) =>
        value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined,
      data,
    );
  const expected = condition.value;
  switch (condition.op) {
    case 'exists':
      return actual !== undefined && actual !== null;
    case 'eq':
      return same(actual, expected);
    case 'neq':
      return !same(actual, expected);
    case 'in':
      return Array.isArray(expected) && expected.some((value) => same(actual, value));
    case 'not_in':
      return Array.isArray(expected) && !expected.some((value) => same(actual, value));
    case 'contains':
      if (Array.isArray(actual)) return actual.some((value) => same(value, expected));
      return (
        typeof actual === 'string' &&
        typeof expected === 'string' &&
        actual.toLowerCase().includes(expected.toLowerCase())
      );
    case 'gt':
      return compare(actual, expected) > 0;
    case 'gte':
      return compare(actual, expected) >= 0;
    case 'lt':
      return compare(actual, expected) < 0;
    case 'lte':
      return compare(actual, expected) <= 0;
  }
}

const same = (a: unknown, b: unknown) => a === b || (a === null && b === undefined);

/** Numbers with numbers, text (timestamps) with text; anything else is no match (NaN). */
function compare(actual: unknown, expected: unknown): number {
  if (typeof actual === 'number' && typeof expected === 'number') return actual - expected;
  if (typeof actual === 'string' && typeof expected === 'string')
    return actual < expected ? -1 : actual > expected ? 1 : 0;
  return Number.NaN;
}
