import type {
  CreateWebhookEndpointBody,
  DeliveryReplay,
  ReplayDeliveriesBody,
  ListDeliveriesQuery,
  ListWebhookEndpointsQuery,
  UpdateWebhookEndpointBody,
  WebhookDelivery,
  WebhookEndpoint,
} from '../contract.js';
import type { PagePromise } from '../pagination.js';
import type { RequestOptions } from '../request-sender.js';
import { Resource, withOffset } from './resource.js';

export class WebhookEndpoints extends Resource {
  list(params: ListWebhookEndpointsQuery = {}, options?: RequestOptions): PagePromise<WebhookEndpoint> {
    return this.paginate('webhookEndpoints.list', (offset) => ({ query: withOffset(params, offset) }), options);
  }

  /** Registers an https URL for event types (or `["*"]`). */
  create(body: CreateWebhookEndpointBody, options?: RequestOptions): Promise<WebhookEndpoint> {
    return this.request('webhookEndpoints.create', { body }, options);
  }

  retrieve(id: string, options?: RequestOptions): Promise<WebhookEndpoint> {
    return this.request('webhookEndpoints.retrieve', { params: { id } }, options);
  }

  /** Changes url, events, description or status (`enabled` re-enables). */
  update(id: string, body: UpdateWebhookEndpointBody, options?: RequestOptions): Promise<WebhookEndpoint> {
    return this.request('webhookEndpoints.update', { params: { id }, body }, options);
  }

  async del(id: string, options?: RequestOptions): Promise<void> {
    await this.request('webhookEndpoints.delete', { params: { id } }, options);
  }

  /** The endpoint's deliveries, newest first, each with its attempts. */
  deliveries(id: string, params: ListDeliveriesQuery = {}, options?: RequestOptions): PagePromise<WebhookDelivery> {
    return this.paginate(
      'webhookEndpoints.listDeliveries',
      (offset) => ({ params: { id }, query: withOffset(params, offset) }),
      options,
    );
  }

  /** Sends a delivery again now (also for a disabled endpoint). */
  retryDelivery(id: string, deliveryId: string, options?: RequestOptions): Promise<WebhookDelivery> {
    return this.request('webhookEndpoints.retryDelivery', { params: { id, delivery_id: deliveryId } }, options);
  }

  /** Sends a signed `ping` to the endpoint now; resolves with its delivery and the attempt made. */
  test(id: string, options?: RequestOptions): Promise<WebhookDelivery> {
    return this.request('webhookEndpoints.test', { params: { id } }, options);
  }

  /** Queues again every delivery of [since, until) with `status` (`failed` by default); says how many. */
  replay(id: string, body: ReplayDeliveriesBody, options?: RequestOptions): Promise<DeliveryReplay> {
    return this.request('webhookEndpoints.replay', { params: { id }, body }, options);
  }
}
