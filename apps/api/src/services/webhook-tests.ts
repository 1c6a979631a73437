import type { WebhookDelivery } from '@convo/core';
import { ApiError } from '../errors.js';
import { webhookDeliveriesRepository } from '../repositories/webhooks.js';
import { endpointLane, enqueue } from '../repositories/jobs.js';
import { type ServiceContext, scopeOf } from './context.js';
import { deliverWebhook } from './webhook-deliveries.js';
import { toWebhookDelivery, webhookEndpointsService } from './webhooks.js';

/** How long the request's own attempt holds the delivery (the webhook timeout is shorter). */
const TEST_LEASE_MS = 60_000;

/**
 * `POST /webhook_endpoints/:id/test`: records a `ping` and its delivery, makes the first attempt
 * in the request itself (as the worker would, to a disabled endpoint too), and answers the
 * delivery as it stands. A failed ping is retried on the usual schedule, by the worker.
 */
export async function testWebhookEndpoint(ctx: ServiceContext, endpointId: string): Promise<WebhookDelivery> {
  const delivery = await webhookEndpointsService.createPing(ctx, endpointId);
  const outcome = await deliverWebhook(ctx, {
    deliveryId: delivery.id,
    manual: true,
    leaseUntil: new Date(Date.now() + TEST_LEASE_MS).toISOString(),
  });
  if (outcome?.retryAt) {
    await enqueue(ctx.database.db, {
      kind: 'deliver_webhook',
      accountId: ctx.accountId,
      payload: { deliveryId: delivery.id },
      runAt: outcome.retryAt,
      lane: endpointLane(endpointId),
    });
  }
  const current = await webhookDeliveriesRepository.findById(scopeOf(ctx), endpointId, delivery.id);
  if (!current) throw ApiError.notFound('webhook endpoint', endpointId);
  return toWebhookDelivery(current);
}
