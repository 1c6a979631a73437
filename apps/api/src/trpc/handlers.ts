import type { OperationId, OperationParsedInput, OperationResult } from '@convo/core';
import { contactsService } from '../services/contacts.js';
import { conversationsService } from '../services/conversations.js';
import { messagesService } from '../services/messages.js';
import { ordersService } from '../services/orders.js';
import { ApiError } from '../errors.js';
import { eventsService } from '../services/events.js';
import { receiveInbound } from '../services/inbound.js';
import { tagsService } from '../services/tags.js';
import { webhookEndpointsService } from '../services/webhooks.js';
import { workflowsService } from '../services/workflows.js';
import type { AuthedContext } from './init.js';

type Handler<K extends OperationId> = (args: { ctx: AuthedContext; input: OperationParsedInput<K> }) => Promise<OperationResult<K>>;

/**
 * One handler per operation of the endpoint table, each a call to a service verb. The type
 * makes the server fail to compile when the table has an operation without a handler here.
 */
export type Handlers = { [K in OperationId]: Handler<K> };

export const handlers: Handlers = {
  'conversations.list': ({ ctx, input }) => conversationsService.list(ctx.service, input.query),
  'conversations.create': ({ ctx, input }) => conversationsService.create(ctx.service, input.body),
  'conversations.retrieve': ({ ctx, input }) => conversationsService.retrieve(ctx.service, input.params.id),
  'conversations.update': ({ ctx, input }) => conversationsService.update(ctx.service, input.params.id, input.body),
  'conversations.listMessages': ({ ctx, input }) => conversationsService.listMessages(ctx.service, input.params.id, input.query),
  'messages.send': ({ ctx, input }) => messagesService.send(ctx.service, input.body),
  'contacts.list': ({ ctx, input }) => contactsService.list(ctx.service, input.query),
  'contacts.create': ({ ctx, input }) => contactsService.create(ctx.service, input.body),
  'contacts.retrieve': ({ ctx, input }) => contactsService.retrieve(ctx.service, input.params.id),
  'contacts.update': ({ ctx, input }) => contactsService.update(ctx.service, input.params.id, input.body),
  'contacts.delete': async ({ ctx, input }) => {
    await contactsService.delete(ctx.service, input.params.id);
    return undefined;
  },
  'contacts.tags.add': ({ ctx, input }) => contactsService.addTag(ctx.service, input.params.id, input.body.tag),
  'contacts.tags.remove': ({ ctx, input }) => contactsService.removeTag(ctx.service, input.params.id, input.params.tag),
  'tags.list': ({ ctx, input }) => tagsService.list(ctx.service, input.query),
  'orders.list': ({ ctx, input }) => ordersService.list(ctx.service, input.query),
  'orders.create': ({ ctx, input }) => ordersService.create(ctx.service, input.body),
  'orders.retrieve': ({ ctx, input }) => ordersService.retrieve(ctx.service, input.params.id),
  'workflows.list': ({ ctx, input }) => workflowsService.list(ctx.service, input.query),
  'workflows.create': ({ ctx, input }) => workflowsService.create(ctx.service, input.body),
  'workflows.retrieve': ({ ctx, input }) => workflowsService.retrieve(ctx.service, input.params.id),
  'workflows.trigger': ({ ctx, input }) => workflowsService.trigger(ctx.service, input.params.id, input.body),
  'workflows.listRuns': ({ ctx, input }) => workflowsService.listRuns(ctx.service, input.params.id, input.query),
  'events.list': ({ ctx, input }) => eventsService.list(ctx.service, input.query),
  'webhookEndpoints.list': ({ ctx, input }) => webhookEndpointsService.list(ctx.service, input.query),
  'webhookEndpoints.create': ({ ctx, input }) => webhookEndpointsService.create(ctx.service, input.body),
  'webhookEndpoints.retrieve': ({ ctx, input }) => webhookEndpointsService.retrieve(ctx.service, input.params.id),
  'webhookEndpoints.update': ({ ctx, input }) => webhookEndpointsService.update(ctx.service, input.params.id, input.body),
  'webhookEndpoints.delete': async ({ ctx, input }) => {
    await webhookEndpointsService.delete(ctx.service, input.params.id);
    return undefined;
  },
  'webhookEndpoints.listDeliveries': ({ ctx, input }) => webhookEndpointsService.listDeliveries(ctx.service, input.params.id, input.query),
  'webhookEndpoints.retryDelivery': ({ ctx, input }) => webhookEndpointsService.retryDelivery(ctx.service, input.params.id, input.params.delivery_id),
  'sandbox.inbound': ({ ctx, input }) => {
    // Also refused through /trpc when the sandbox is off (REST does not route it at all).
    if (!ctx.service.settings.sandboxEnabled) throw new ApiError('not_found', 'The sandbox is not enabled on this server');
    return receiveInbound(ctx.service, input.body);
  },
};
