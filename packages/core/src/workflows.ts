import * as z from 'zod';
import { ConversationStatus, Id, Timestamp, listOf, pagination, text } from './common.js';
import { TagName } from './contacts.js';
import { MessageContent } from './messages.js';
import { EVENT_TYPES } from './event-types.js';
import { WebhookUrl } from './webhooks.js';

/** The longest a single wait step may wait. */
export const MAX_WAIT_SECONDS = 30 * 24 * 60 * 60;

/** How a condition compares a field of the event's data with its value. */
export const CONDITION_OPERATORS = [
  'eq',
  'neq',
  'in',
  'not_in',
  'contains',
  'gt',
  'gte',
  'lt',
  'lte',
  'exists',
] as const;

const ConditionValue = z.union([
  z.string().max(1000),
  z.number(),
  z.boolean(),
  z.null(),
  z.array(z.union([z.string().max(1000), z.number()])).max(50),
]);

export const WorkflowCondition = z
  .strictObject({
    field: z
      .string()
      .max(100)
      .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, {
        message: 'A field as a dot path of letters, digits, _ and -, e.g. status, contact.tags, data.orderId',
      })
      .meta({
        description:
          "A field as a dot path: of the event's `data` in a trigger (`platform`, `status`, `contact.tags`, `total_amount`); `contact.*`, `data.*` or `event.*` in an `if` step (`data.orderId`).",
      }),
    op: z.enum(CONDITION_OPERATORS).meta({
      description:
        '`eq`/`neq` equal or not; `in`/`not_in` one of a list; `contains` a list (tags) holds the value, or a text includes it; `gt`/`gte`/`lt`/`lte` compare numbers or timestamps; `exists` present and not null (no value). Without a value, `eq` matches an absent or null field.',
    }),
    value: ConditionValue.optional(),
  })
  .meta({ id: 'WorkflowCondition' });
export type WorkflowCondition = z.infer<typeof WorkflowCondition>;

/** How deep `if` steps may nest. */
export const MAX_IF_DEPTH = 3;
/** Steps of a workflow in all, counting every step inside `if` steps. */
export const MAX_STEPS_IN_ALL = 100;
/** Steps in one list: a workflow's own, or one branch of an `if`. */
export const MAX_STEPS_PER_LIST = 50;

const StepUrl = WebhookUrl.meta({
  description:
    'Where the step POSTs. https only, never a private address (the rules and timeout of webhook deliveries).',
});

/** The step types; `if` holds step lists of its own (see WorkflowSteps for the bounds). */
export const WorkflowStep = z
  .discriminatedUnion('type', [
    z.strictObject({
      type: z.literal('send_message'),
      content: MessageContent.meta({ description: 'May use `{{contact.name}}` and `{{data.<key>}}`.' }),
    }),
    z.strictObject({ type: z.literal('add_tag'), tag: TagName }),
    z.strictObject({ type: z.literal('remove_tag'), tag: TagName }),
    z.strictObject({ type: z.literal('set_conversation_status'), status: ConversationStatus }),
    z.strictObject({ type: z.literal('wait'), seconds: z.int().min(1).max(MAX_WAIT_SECONDS) }),
    z.strictObject({ type: z.literal('http_request'), url: StepUrl }),
    z.strictObject({
      type: z.literal('if'),
      conditions: z.array(WorkflowCondition).min(1).max(10).meta({
        description:
          'All must hold for `then` to run, else `else` runs. Fields: `contact.*`, `data.*`, and `event.*` in a run its trigger started.',
      }),
      // biome-ignore lint/suspicious/noThenProperty: `then` is the step's documented field name; the object is data, never awaited.
      get then(): z.ZodArray<typeof WorkflowStep> {
        return z.array(WorkflowStep).min(1).max(MAX_STEPS_PER_LIST);
      },
      get else(): z.ZodOptional<z.ZodArray<typeof WorkflowStep>> {
        return z.array(WorkflowStep).max(MAX_STEPS_PER_LIST).optional();
      },
    }),
  ])
  .meta({ id: 'WorkflowStep' });
export type WorkflowStep = z.infer<typeof WorkflowStep>;
export const STEP_TYPES = [
  'send_message',
  'add_tag',
  'remove_tag',
  'set_conversation_status',
  'wait',
  'http_request',
  'if',
] as const;

/** Calls `visit` for every step, nested ones after their `if`, with its depth (1 for a workflow's own). */
export function forEachStep(
  steps: readonly WorkflowStep[],
  visit: (step: WorkflowStep, path: (string | number)[], depth: number) => void,
  path: (string | number)[] = [],
  depth = 1,
): void {
  steps.forEach((step, index) => {
    visit(step, [...path, index], depth);
    if (step.type === 'if') {
      forEachStep(step.then, visit, [...path, index, 'then'], depth + 1);
      forEachStep(step.else ?? [], visit, [...path, index, 'else'], depth + 1);
    }
  });
}

/** A workflow's steps, checked against MAX_STEPS_PER_LIST, MAX_IF_DEPTH and MAX_STEPS_IN_ALL. */
export const WorkflowSteps = z
  .array(WorkflowStep)
  .min(1)
  .max(MAX_STEPS_PER_LIST)
  .check((ctx) => {
    let count = 0;
    forEachStep(ctx.value, (step, path, depth) => {
      count += 1;
      if (step.type === 'if' && depth > MAX_IF_DEPTH) {
        ctx.issues.push({
          code: 'too_big',
          origin: 'array',
          maximum: MAX_IF_DEPTH,
          inclusive: true,
          path,
          input: step,
          message: `if steps nest at most ${MAX_IF_DEPTH} deep`,
        });
      }
    });
    if (count > MAX_STEPS_IN_ALL) {
      ctx.issues.push({
        code: 'too_big',
        origin: 'array',
        maximum: MAX_STEPS_IN_ALL,
        inclusive: true,
        input: ctx.value,
        message: `A workflow has at most ${MAX_STEPS_IN_ALL} steps in all, counting those inside if steps`,
      });
    }
  })
  .meta({
    description: `1 to ${MAX_STEPS_PER_LIST} steps; \`if\` steps nest at most ${MAX_IF_DEPTH} deep, and a workflow has at most ${MAX_STEPS_IN_ALL} steps in all.`,
  });

/** Events that can start a run: they name a contact who still exists. */
export const TRIGGER_EVENT_TYPES = EVENT_TYPES.filter((type) => type !== 'contact.deleted');

const triggerEvent = z
  .enum(TRIGGER_EVENT_TYPES as unknown as [string, ...string[]])
  .meta({ description: "The event type that starts a run, for the event's contact." });

/** A workflow's trigger as the API shows it. */
export const WorkflowTrigger = z
  .object({
    event: triggerEvent,
    conditions: z.array(WorkflowCondition).meta({ description: "All must hold for the event's data." }),
  })
  .meta({ id: 'WorkflowTrigger' });
/** A trigger as a request gives it: no conditions means every event of the type. */
export const WorkflowTriggerInput = z
  .strictObject({ event: triggerEvent, conditions: z.array(WorkflowCondition).max(10).default([]) })
  .meta({ id: 'WorkflowTriggerInput' });
export type WorkflowTrigger = z.infer<typeof WorkflowTrigger>;

export const Workflow = z
  .object({
    id: Id,
    name: z.string(),
    steps: z.array(WorkflowStep),
    enabled: z.boolean().meta({ description: 'A disabled workflow starts no run.' }),
    trigger: WorkflowTrigger.nullable().meta({
      description: 'The event that starts a run by itself; null: runs start only by `trigger`.',
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Workflow' });
export type Workflow = z.infer<typeof Workflow>;

export const WorkflowList = listOf(Workflow, 'WorkflowList');
export type WorkflowList = z.infer<typeof WorkflowList>;

export const CreateWorkflowBody = z
  .strictObject({
    name: text(1, 200),
    steps: WorkflowSteps,
    enabled: z.boolean().default(true),
    trigger: WorkflowTriggerInput.nullable().optional(),
  })
  .meta({ id: 'CreateWorkflowBody' });
export type CreateWorkflowBody = z.input<typeof CreateWorkflowBody>;

export const UpdateWorkflowBody = z
  .strictObject({
    name: text(1, 200).optional(),
    steps: WorkflowSteps.optional().meta({ description: 'Runs already started keep the steps they started with.' }),
    enabled: z.boolean().optional(),
    trigger: WorkflowTriggerInput.nullable().optional(),
  })
  .meta({ id: 'UpdateWorkflowBody' });
export type UpdateWorkflowBody = z.input<typeof UpdateWorkflowBody>;

export const ListWorkflowsQuery = z.strictObject({ ...pagination });
export type ListWorkflowsQuery = z.input<typeof ListWorkflowsQuery>;

export const RunStatus = z
  .enum(['queued', 'running', 'waiting', 'succeeded', 'failed', 'cancelled', 'skipped'])
  .meta({ id: 'WorkflowRunStatus' });
export type RunStatus = z.infer<typeof RunStatus>;
export const StepStatus = z
  .enum(['pending', 'running', 'succeeded', 'failed', 'skipped'])
  .meta({ id: 'WorkflowStepStatus' });
export type StepStatus = z.infer<typeof StepStatus>;

export const MAX_RUN_DATA_KEYS = 50;
export const RunData = z
  .record(text(1, 100), z.union([z.string().max(10_000), z.number(), z.boolean(), z.null()]))
  .check((ctx) => {
    const count = Object.keys(ctx.value).length;
    if (count > MAX_RUN_DATA_KEYS) {
      ctx.issues.push({
        code: 'too_big',
        origin: 'object',
        maximum: MAX_RUN_DATA_KEYS,
        inclusive: true,
        input: ctx.value,
        message: `data holds at most ${MAX_RUN_DATA_KEYS} keys`,
      });
    }
  })
  .meta({
    description: 'Context of the run (at most 50 keys), available to steps as `{{data.<key>}}`; may name an order.',
    maxProperties: MAX_RUN_DATA_KEYS,
  });

export const TriggerWorkflowBody = z
  .strictObject({
    contact_id: Id,
    data: RunData.optional(),
  })
  .meta({ id: 'TriggerWorkflowBody' });
export type TriggerWorkflowBody = z.input<typeof TriggerWorkflowBody>;

export const WorkflowRun = z
  .object({
    id: Id,
    workflow_id: Id,
    contact_id: Id.nullable(),
    event_id: Id.nullable().meta({
      description: "The event that started the run (its workflow's trigger); null for a run started by `trigger`.",
    }),
    status: RunStatus,
    data: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
    steps: z
      .array(
        z.object({
          index: z.int().min(0).meta({
            description: 'Place in this list: every step of the workflow, those inside an `if` right after it.',
          }),
          path: z.string().optional().meta({
            description:
              "Where the step is in the workflow's steps (`2`, or `1.then.0` inside the `if` at 1); on every step of a run whose workflow has `if` steps, on none otherwise.",
          }),
          type: z.enum(STEP_TYPES),
          status: StepStatus.meta({ description: '`skipped` also for the steps of the branch an `if` did not take.' }),
          error: z.string().nullable(),
          branch: z
            .enum(['then', 'else'])
            .nullable()
            .optional()
            .meta({ description: 'An `if` step only: the branch it took, null until it ran.' }),
          response_status: z.int().nullable().optional().meta({
            description: 'An `http_request` step only: the status code of the answer, null until one arrived.',
          }),
        }),
      )
      .meta({ description: 'Every step of the workflow in order, those inside `if` steps included.' }),
    error: z.string().nullable(),
    created_at: Timestamp,
    started_at: Timestamp.nullable(),
    finished_at: Timestamp.nullable(),
  })
  .meta({ id: 'WorkflowRun' });
export type WorkflowRun = z.infer<typeof WorkflowRun>;

export const WorkflowRunList = listOf(WorkflowRun, 'WorkflowRunList');
export type WorkflowRunList = z.infer<typeof WorkflowRunList>;

export const ListRunsQuery = z.strictObject({ ...pagination, status: RunStatus.optional() });
export type ListRunsQuery = z.input<typeof ListRunsQuery>;

export const WorkflowIdParams = z.strictObject({ id: Id });
export const WorkflowRunParams = z.strictObject({ id: Id, run_id: Id });
