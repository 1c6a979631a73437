import * as z from 'zod';
import { Id, Phone, Platform, Timestamp, listOf, pagination } from './common.js';
import { Contact, ContactName } from './contacts.js';
import { Conversation } from './conversations.js';
import { Message, MessageContent } from './messages.js';
import { Order } from './orders.js';
import { WorkflowRun } from './workflows.js';

export { EVENT_TYPES } from './event-types.js';
import { EVENT_TYPES } from './event-types.js';
export const EventType = z.enum(EVENT_TYPES).meta({ id: 'EventType' });
export type EventType = z.infer<typeof EventType>;

const eventOf = <T extends EventType, D extends z.ZodType>(type: T, data: D) =>
  z.object({
    id: Id,
    type: z.literal(type),
    created_at: Timestamp,
    sequence: z
      .int()
      .min(1)
      .optional()
      .meta({ description: 'Per-conversation order of events that concern a conversation.' }),
    data,
  });

export const Event = z
  .discriminatedUnion('type', [
    eventOf('conversation.created', Conversation),
    eventOf('message.received', Message),
    eventOf('order.placed', Order),
    eventOf('conversation.resolved', Conversation),
    eventOf('message.updated', Message),
    eventOf('order.updated', Order),
    eventOf('contact.created', Contact),
    eventOf('contact.updated', Contact),
    eventOf('contact.deleted', Contact),
    eventOf('conversation.updated', Conversation),
    eventOf('workflow_run.succeeded', WorkflowRun),
    eventOf('workflow_run.failed', WorkflowRun),
  ])
  .meta({ id: 'Event' });
export type Event = z.infer<typeof Event>;

/**
 * What `POST /webhook_endpoints/{id}/test` delivers: signed as every event is, to the one endpoint,
 * and never listed by `GET /events`.
 */
export const PingEvent = z
  .object({ id: Id, type: z.literal('ping'), created_at: Timestamp, data: z.object({ endpoint_id: Id }) })
  .meta({ id: 'PingEvent' });
export type PingEvent = z.infer<typeof PingEvent>;

export const EventList = listOf(Event, 'EventList');
export type EventList = z.infer<typeof EventList>;

export const ListEventsQuery = z.strictObject({
  ...pagination,
  type: EventType.optional(),
  starting_after: Id.optional().meta({
    description:
      'An event id: list the events recorded before it (the next page, newest first). `total` then counts the events before it, and `offset` counts from it.',
  }),
  ending_before: Id.optional().meta({
    description:
      'An event id: list the events recorded after it, the `limit` oldest of them (newest first, as always). To catch up, pass the newest event id you have, then the first id of each page, until `has_more` is false. With `starting_after` too: the events between the two, paged from `starting_after`. `total` counts the events after it (between the two), so `has_more` is `offset + data.length < total` here too.',
  }),
});
export type ListEventsQuery = z.input<typeof ListEventsQuery>;

const EVENT_TYPE_ALTERNATIVES = EVENT_TYPES.map((type) => type.replaceAll('.', '\\.')).join('|');

/** Event types, comma-separated (`message.received,message.updated`): each must be one of EventType. */
const EventTypeList = z
  .string()
  .check((ctx) => {
    const unknown = ctx.value.split(',').find((type) => !(EVENT_TYPES as readonly string[]).includes(type));
    if (unknown !== undefined)
      ctx.issues.push({
        code: 'custom',
        params: { constraint: 'enum' },
        input: ctx.value,
        message: `Unknown event type "${unknown}": use ${EVENT_TYPES.join(', ')}, comma-separated`,
      });
  })
  .transform((value) => value.split(',') as EventType[])
  .meta({
    description: 'Only events of these types, comma-separated (`message.received,conversation.updated`).',
    // The document states the rule the check applies, so generated clients and the route fuzz know it.
    pattern: `^(${EVENT_TYPE_ALTERNATIVES})(,(${EVENT_TYPE_ALTERNATIVES}))*$`,
  });

export const StreamEventsQuery = z.strictObject({
  type: EventTypeList.optional(),
  starting_after: Id.optional().meta({
    description:
      'An event id: stream the events recorded after it first, then the new ones. The `Last-Event-ID` header does the same and wins; without either the stream starts from now.',
  }),
});
export type StreamEventsQuery = z.input<typeof StreamEventsQuery>;

/** A message arriving from a contact on a platform (the sandbox stands in for the platform). */
export const SandboxInboundBody = z
  .strictObject({
    platform: Platform,
    from: z.strictObject({ phone: Phone, name: ContactName.optional() }),
    content: MessageContent,
  })
  .meta({ id: 'SandboxInboundBody' });
export type SandboxInboundBody = z.input<typeof SandboxInboundBody>;
