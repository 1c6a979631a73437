import {
  type CreateWebhookEndpointBody,
  type CreatedWebhookEndpoint,
  type DeliveryReplay,
  type ListDeliveriesQuery,
  type ListWebhookEndpointsQuery,
  MAX_WEBHOOK_ENDPOINTS,
  type ReplayDeliveriesBody,
  type UpdateWebhookEndpointBody,
  type WebhookDelivery,
  type WebhookEndpoint,
} from '@convo/core';
import type * as z from 'zod';
import { ApiError } from '../errors.js';
import { newId, now } from '../ids.js';
import { accountsRepository, apiKeysRepository } from '../repositories/accounts.js';
import { eventsRepository } from '../repositories/events.js';
import type { TenantScope } from '../repositories/tenant.js';
import {
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
  webhookDeliveriesRepository,
  webhookEndpointsRepository,
} from '../repositories/webhooks.js';
import { webhookUrlProblem } from '../webhook-addresses.js';
import { type NewJob, endpointLane, enqueue, enqueueAll } from '../repositories/jobs.js';
import { newKeyRow } from './accounts.js';
import { type AccountContext, type Change, type ServiceContext, transaction, page, scopeOf } from './context.js';

/**
 * An attempt as stored: the public record plus whether it was a manual retry (manual attempts do
 * not move the delivery along its automatic retry schedule).
 */
export interface StoredDeliveryAttempt {
  at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  manual?: boolean;
}

export const parseAttempts = (row: Pick<WebhookDeliveryRow, 'attempts'>): StoredDeliveryAttempt[] =>
  JSON.parse(row.attempts) as StoredDeliveryAttempt[];

export const toWebhookEndpoint = (row: Omit<WebhookEndpointRow, 'account_id'>): WebhookEndpoint => ({
  id: row.id,
  url: row.url,
  events: JSON.parse(row.events) as string[],
  description: row.description,
  status: row.status,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

export const toWebhookDelivery = (row: WebhookDeliveryRow): WebhookDelivery => ({
  id: row.id,
  event_id: row.event_id,
  event_type: row.event_type,
  endpoint_id: row.endpoint_id,
  status: row.status,
  attempts: parseAttempts(row).map(({ at, status_code, duration_ms, error }) => ({
    at,
    status_code,
    duration_ms,
    error,
  })),
  next_attempt_at: row.next_attempt_at,
  created_at: row.created_at,
});

async function findEndpointOrThrow(scope: TenantScope, id: string): Promise<WebhookEndpointRow> {
  const row = await webhookEndpointsRepository.findById(scope, id);
  if (!row) throw ApiError.notFound('webhook endpoint', id);
  return row;
}

/** https and a public host, unless the server allows private webhooks (a 400 on `url` otherwise). */
async function assertDeliverableUrl(ctx: ServiceContext, url: string): Promise<void> {
  const problem = await webhookUrlProblem(url, { allowPrivate: ctx.settings.allowPrivateWebhooks });
  if (problem) throw ApiError.badRequest('url', 'format', problem);
}

export const webhookEndpointsService = {
  async list(ctx: ServiceContext, query: z.output<typeof ListWebhookEndpointsQuery>) {
    const { rows, total } = await webhookEndpointsRepository.list(scopeOf(ctx), query);
    return page(rows.map(toWebhookEndpoint), total, query.limit, query.offset);
  },

  async create(ctx: ServiceContext, body: z.output<typeof CreateWebhookEndpointBody>): Promise<CreatedWebhookEndpoint> {
    await assertDeliverableUrl(ctx, body.url);
    const at = now();
    const row = {
      id: newId('webhookEndpoint'),
      url: body.url,
      events: JSON.stringify(body.events),
      description: body.description ?? null,
      status: 'enabled' as const,
      created_at: at,
      updated_at: at,
    };
    return transaction(ctx, async (tx): Promise<CreatedWebhookEndpoint> => {
      const scope = scopeOf(tx);
      await accountsRepository.lock(scope.db, scope.dialect, scope.accountId);
      if ((await webhookEndpointsRepository.count(scope)) >= MAX_WEBHOOK_ENDPOINTS) {
        throw ApiError.badRequest(
          'body',
          'max',
          `An account has at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints; delete one first (one endpoint may subscribe to several event types)`,
        );
      }
      await webhookEndpointsRepository.insert(scope, row);
      // Deliveries need a key to sign them: an account without one gets it here, shown this once.
      if ((await apiKeysRepository.signingSecrets(scope.db, scope.accountId)).length > 0) return toWebhookEndpoint(row);
      const signing = newKeyRow(scope.accountId, 'webhook', `Signing key, created with ${row.id}`);
      await apiKeysRepository.insert(scope.db, signing.row);
      return { ...toWebhookEndpoint(row), secret: signing.key };
    });
  },

  async retrieve(ctx: ServiceContext, id: string): Promise<WebhookEndpoint> {
    return toWebhookEndpoint(await findEndpointOrThrow(scopeOf(ctx), id));
  },

  /** Partial; `status: "enabled"` re-enables an endpoint disabled by hand or by a 410. */
  async update(ctx: ServiceContext, { id, body }: Change<typeof UpdateWebhookEndpointBody>): Promise<WebhookEndpoint> {
    // Validation (400) comes before existence (404); the DNS look-up stays outside the transaction.
    if (body.url !== undefined) await assertDeliverableUrl(ctx, body.url);
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const current = await findEndpointOrThrow(scope, id);
      const patch: Partial<WebhookEndpointRow> = {};
      if (body.url !== undefined) patch.url = body.url;
      if (body.events !== undefined) patch.events = JSON.stringify(body.events);
      if (body.description !== undefined) patch.description = body.description;
      if (body.status !== undefined) patch.status = body.status;
      if (Object.keys(patch).length === 0) return toWebhookEndpoint(current);
      patch.updated_at = now();
      await webhookEndpointsRepository.update(scope, id, patch);
      return toWebhookEndpoint({ ...current, ...patch });
    });
  },

  /** Its deliveries go with it; their queued jobs find nothing to do. */
  async delete(ctx: ServiceContext, id: string): Promise<void> {
    // In a transaction of its own, retried: its cascade to the deliveries can deadlock with writers.
    const result = await transaction(ctx, (tx) => webhookEndpointsRepository.delete(scopeOf(tx), id));
    if (Number(result.numDeletedRows) === 0) throw ApiError.notFound('webhook endpoint', id);
  },

  async listDeliveries(
    ctx: ServiceContext,
    { endpointId, query }: { endpointId: string; query: z.output<typeof ListDeliveriesQuery> },
  ) {
    const scope = scopeOf(ctx);
    await findEndpointOrThrow(scope, endpointId);
    const { rows, total } = await webhookDeliveriesRepository.list(scope, endpointId, { status: query.status }, query);
    return page(rows.map(toWebhookDelivery), total, query.limit, query.offset);
  },

  /** The deliveries an event caused and their attempts (the console's event log). */
  async listEventDeliveries(ctx: AccountContext, eventId: string): Promise<WebhookDelivery[]> {
    return (await webhookDeliveriesRepository.listByEvent(scopeOf(ctx), eventId)).map(toWebhookDelivery);
  },

  /**
   * Makes the delivery pending with an attempt due now, and queues that attempt as a manual one,
   * which is sent even when the endpoint is disabled.
   */
  async retryDelivery(
    ctx: ServiceContext,
    { endpointId, deliveryId }: { endpointId: string; deliveryId: string },
  ): Promise<WebhookDelivery> {
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      await findEndpointOrThrow(scope, endpointId);
      const current = await webhookDeliveriesRepository.findById(scope, endpointId, deliveryId);
      if (!current) throw ApiError.notFound('webhook delivery', deliveryId);
      const at = now();
      const patch = { status: 'pending' as const, next_attempt_at: at, updated_at: at };
      await webhookDeliveriesRepository.update(scope, deliveryId, patch);
      await enqueue(scope.db, manualAttempt(scope, endpointId, deliveryId, at));
      return toWebhookDelivery({ ...current, ...patch });
    });
  },

  /**
   * Queues again, at once, every delivery of the endpoint created in [since, until) with `status`
   * (a receiver's outage over). They become pending, so a second call meanwhile finds none.
   */
  async replay(
    ctx: ServiceContext,
    { endpointId, body }: { endpointId: string; body: z.output<typeof ReplayDeliveriesBody> },
  ): Promise<DeliveryReplay> {
    const since = new Date(body.since).toISOString();
    const until = new Date(body.until).toISOString();
    // An empty window (until at or before since) replays nothing.
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      await findEndpointOrThrow(scope, endpointId);
      const at = now();
      const ids = await webhookDeliveriesRepository.takeForReplay(
        scope,
        endpointId,
        { since, until, status: body.status },
        at,
      );
      await enqueueAll(
        scope.db,
        ids.map((deliveryId) => manualAttempt(scope, endpointId, deliveryId, at)),
      );
      return { endpoint_id: endpointId, since, until, status: body.status, replayed: ids.length };
    });
  },

  /** A `ping` event and its delivery to this endpoint alone, pending now: the test's first step. */
  async createPing(ctx: ServiceContext, endpointId: string): Promise<WebhookDeliveryRow> {
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      await findEndpointOrThrow(scope, endpointId);
      const at = now();
      const eventId = newId('event');
      await eventsRepository.insert(scope, {
        id: eventId,
        type: 'ping',
        conversation_id: null,
        sequence: null,
        data: JSON.stringify({ endpoint_id: endpointId }),
        created_at: at,
        position: null,
      });
      const row = {
        id: newId('webhookDelivery'),
        endpoint_id: endpointId,
        event_id: eventId,
        event_type: 'ping' as const,
        status: 'pending' as const,
        attempts: '[]',
        next_attempt_at: at,
        created_at: at,
        updated_at: at,
      };
      await webhookDeliveriesRepository.insert(scope, row);
      return { ...row, account_id: scope.accountId };
    });
  },
};

/** The job of an attempt asked for through the API (a retry or a replay): due at `at`, in the endpoint's lane. */
const manualAttempt = (
  scope: TenantScope,
  endpointId: string,
  deliveryId: string,
  at: string,
): NewJob<'deliver_webhook'> => ({
  kind: 'deliver_webhook',
  accountId: scope.accountId,
  payload: { deliveryId, manual: true },
  runAt: at,
  lane: endpointLane(endpointId),
});
