import type { Event, EventType, ListEventsQuery } from '@convo/core';
import type * as z from 'zod';
import { ApiError } from '../errors.js';
import { startTriggeredRuns } from './automations.js';
import { newId, now } from '../ids.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { type EventRow, type StoredEvent, eventsRepository } from '../repositories/events.js';
import type { TenantScope } from '../repositories/tenant.js';
import { webhookDeliveriesRepository, webhookEndpointsRepository } from '../repositories/webhooks.js';
import { endpointLane, enqueue } from '../worker/queue.js';
import { type ServiceContext, inTransaction, page, scopeOf } from './context.js';

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
  const conversationId = typeof conversation === 'string' ? conversation : conversation?.id;
  const sequence =
    conversation === undefined
      ? null
      : typeof conversation === 'string'
        ? await conversationsRepository.nextEventSequence(scope, conversation)
        : conversation.sequence;
  const row: EventRow = {
    account_id: scope.accountId,
    id: newId('event'),
    type,
    conversation_id: conversationId ?? null,
    sequence,
    data: JSON.stringify(data),
    created_at: now(),
    position: null,
  };
  await eventsRepository.insert(scope, row);
  await startTriggeredRuns(scope, { id: row.id, type, data });

  for (const endpoint of await webhookEndpointsRepository.listEnabled(scope)) {
    const subscribed = JSON.parse(endpoint.events) as string[];
    if (!subscribed.includes('*') && !subscribed.includes(type)) continue;
    const deliveryId = newId('webhookDelivery');
    await webhookDeliveriesRepository.insert(scope, {
      id: deliveryId,
      endpoint_id: endpoint.id,
      event_id: row.id,
      event_type: type,
      status: 'pending',
      attempts: '[]',
      next_attempt_at: row.created_at,
      created_at: row.created_at,
      updated_at: row.created_at,
    });
    await enqueue(scope.db, { kind: 'deliver_webhook', accountId: scope.accountId, payload: { deliveryId }, lane: endpointLane(endpoint.id) });
  }
  return toEvent(row);
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
    await inTransaction(ctx, (scope) => eventsRepository.assignPositions(scope));
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
    const [{ rows, hasMore }, total] = await Promise.all([eventsRepository.listFrom(scope, filter, cursor, query), eventsRepository.count(scope, filter)]);
    return { data: rows.map(toEvent), total, limit: query.limit, offset: query.offset, has_more: hasMore };
  },
};
