import type { Event, EventType, ListEventsQuery } from '@convo/core';
import type * as z from 'zod';
import { ApiError } from '../errors.js';
import { startTriggeredRuns } from './automations.js';
import { newId, now } from '../ids.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { type EventRow, type StoredEvent, eventsRepository } from '../repositories/events.js';
import type { TenantScope } from '../repositories/tenant.js';
import {
  type WebhookDeliveryRow,
  webhookDeliveriesRepository,
  webhookEndpointsRepository,
} from '../repositories/webhooks.js';
import { type NewJob, endpointLane, enqueueAll } from '../repositories/jobs.js';
import { type ServiceContext, transaction, page, scopeOf } from './context.js';

/** Events are kept, and listed, for 30 days. */
export const EVENT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export const toEvent = (row: StoredEvent): Event =>
  ({
    id: row.id,
    type: row.type,
    created_at: row.created_at,
    ...(row.sequence === null ? {} : { sequence: row.sequence }),
    data: JSON.parse(row.data),
  }) as Event;

type DataOf<T extends EventType> = Extract<Event, { type: T }>['data'];

/** An event to record: its type and data, and the conversation it concerns with its sequence number there. */
export interface NewEvent<T extends EventType = EventType> {
  type: T;
  data: DataOf<T>;
  conversation?: { id: string; sequence: number };
}

/**
 * Records an event in the transaction of the change that causes it (the outbox), with the next
 * sequence number of its conversation (or the one the change already took for it), and queues a
 * delivery to every enabled endpoint that subscribes to its type. A rolled-back change leaves no
 * event and no delivery.
 */
export async function emitEvent<T extends EventType>(
  scope: TenantScope,
  type: T,
  data: DataOf<T>,
  conversation?: string | { id: string; sequence: number },
): Promise<Event> {
  const sequenced =
    typeof conversation === 'string'
      ? { id: conversation, sequence: await conversationsRepository.nextEventSequence(scope, conversation) }
      : conversation;
  const [event] = await emitEvents(scope, [{ type, data, ...(sequenced ? { conversation: sequenced } : {}) }]);
  return event as Event;
}

/**
 * Records several events as emitEvent does, each with the sequence number its change took, in a
 * few statements for all of them: one insert of the events, one of their deliveries, one of the
 * deliveries' jobs.
 */
export async function emitEvents(scope: TenantScope, events: readonly NewEvent[]): Promise<Event[]> {
  if (events.length === 0) return [];
  const at = now();
  const rows: EventRow[] = events.map((event) => ({
    account_id: scope.accountId,
    id: newId('event'),
    type: event.type,
    conversation_id: event.conversation?.id ?? null,
    sequence: event.conversation?.sequence ?? null,
    data: JSON.stringify(event.data),
    created_at: at,
    position: null,
  }));
  await eventsRepository.insert(scope, rows);
  await eventsRepository.announce(scope);
  await startTriggeredRuns(
    scope,
    events.map((event, index) => ({ id: (rows[index] as EventRow).id, type: event.type, data: event.data })),
  );

  const endpoints = await webhookEndpointsRepository.listEnabled(scope);
  const deliveries: Omit<WebhookDeliveryRow, 'account_id'>[] = [];
  const jobs: NewJob<'deliver_webhook'>[] = [];
  for (const row of rows) {
    for (const endpoint of endpoints) {
      const subscribed = JSON.parse(endpoint.events) as string[];
      if (!subscribed.includes('*') && !subscribed.includes(row.type)) continue;
      const deliveryId = newId('webhookDelivery');
      deliveries.push({
        id: deliveryId,
        endpoint_id: endpoint.id,
        event_id: row.id,
        event_type: row.type,
        status: 'pending',
        attempts: '[]',
        next_attempt_at: at,
        created_at: at,
        updated_at: at,
      });
      jobs.push({
        kind: 'deliver_webhook',
        accountId: scope.accountId,
        payload: { deliveryId },
        lane: endpointLane(endpoint.id),
      });
    }
  }
  await webhookDeliveriesRepository.insert(scope, deliveries);
  await enqueueAll(scope.db, jobs);
  return rows.map(toEvent);
}

export const eventsService = {
  async list(ctx: ServiceContext, query: z.output<typeof ListEventsQuery>) {
    const since = new Date(Date.now() - EVENT_RETENTION_MS).toISOString();
    const filter = { type: query.type, since };
    if (query.starting_after === undefined && query.ending_before === undefined) {
      const { rows, total } = await eventsRepository.list(scopeOf(ctx), filter, query);
      return page(rows.map(toEvent), total, query.limit, query.offset);
    }
    // Positions first: every event committed by now gets its place in the log, the cursors' too.
    await transaction(ctx, (tx) => eventsRepository.assignPositions(scopeOf(tx)));
    const scope = scopeOf(ctx);
    const positionOf = async (id: string | undefined) => {
      if (id === undefined) return undefined;
      const position = await eventsRepository.positionOf(scope, id);
      if (position === undefined || position === null) throw ApiError.notFound('event', id);
      return position;
    };
    const after = await positionOf(query.ending_before);
    const before = await positionOf(query.starting_after);
    const cursor =
      before === undefined
        ? { direction: 'after' as const, position: after as number }
        : { direction: 'before' as const, position: before, ...(after === undefined ? {} : { after }) };
    // `total` counts the events on the cursor's side, so has_more = offset + data.length < total holds as for any list.
    const { rows, total } = await eventsRepository.listFrom(scope, filter, cursor, query);
    return page(rows.map(toEvent), total, query.limit, query.offset);
  },
};
