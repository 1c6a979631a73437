import { type OperationId, type OperationParsedInput, type OperationResult, endpoints } from '@convo/core';
import { type OperationResponse, answered, idempotently, requestHashOf } from './edge/idempotency.js';
import { ApiError } from './errors.js';
import { serializeResponse } from './serializers.js';
import { channelsService } from './services/channels.js';
import { contactsService } from './services/contacts.js';
import { type ServiceContext, withinTransaction } from './services/context.js';
import { conversationsService } from './services/conversations.js';
import { eventsService } from './services/events.js';
import { receiveInbound } from './services/inbound.js';
import { messagesService } from './services/messages.js';
import { ordersService } from './services/orders.js';
import { tagsService } from './services/tags.js';
import { testWebhookEndpoint } from './services/webhook-tests.js';
import { webhookEndpointsService } from './services/webhooks.js';
import { workflowsService } from './services/workflows.js';

type Handler<K extends OperationId> = (ctx: ServiceContext, input: OperationParsedInput<K>) => Promise<OperationResult<K>>;

/**
 * One handler per operation of the endpoint table, each a call to a service verb. The type
 * makes the server fail to compile when the table has an operation without a handler here.
 */
export type Handlers = { [K in OperationId]: Handler<K> };

export const handlers: Handlers = {
  'conversations.list': (ctx, input) => conversationsService.list(ctx, input.query),
  'conversations.create': (ctx, input) => conversationsService.create(ctx, input.body),
  'conversations.retrieve': (ctx, input) => conversationsService.retrieve(ctx, input.params.id),
  'conversations.update': (ctx, input) => conversationsService.update(ctx, input.params.id, input.body),
  'conversations.listMessages': (ctx, input) => conversationsService.listMessages(ctx, input.params.id, input.query),
  'messages.send': (ctx, input) => messagesService.send(ctx, input.body),
  'messages.retrieve': (ctx, input) => messagesService.retrieve(ctx, input.params.id),
  'contacts.list': (ctx, input) => contactsService.list(ctx, input.query),
  'contacts.create': (ctx, input) => contactsService.create(ctx, input.body),
  'contacts.retrieve': (ctx, input) => contactsService.retrieve(ctx, input.params.id),
  'contacts.update': (ctx, input) => contactsService.update(ctx, input.params.id, input.body),
  'contacts.delete': async (ctx, input) => {
    await contactsService.delete(ctx, input.params.id);
    return undefined;
  },
  'contacts.tags.add': (ctx, input) => contactsService.addTag(ctx, input.params.id, input.body.tag),
  'contacts.tags.remove': (ctx, input) => contactsService.removeTag(ctx, input.params.id, input.params.tag),
  'tags.list': (ctx, input) => tagsService.list(ctx, input.query),
  'tags.update': (ctx, input) => tagsService.update(ctx, input.params.tag, input.body),
  'tags.delete': async (ctx, input) => {
    await tagsService.delete(ctx, input.params.tag);
    return undefined;
  },
  'orders.list': (ctx, input) => ordersService.list(ctx, input.query),
  'orders.create': (ctx, input) => ordersService.create(ctx, input.body),
  'orders.retrieve': (ctx, input) => ordersService.retrieve(ctx, input.params.id),
  'orders.update': (ctx, input) => ordersService.update(ctx, input.params.id, input.body),
  'workflows.list': (ctx, input) => workflowsService.list(ctx, input.query),
  'workflows.create': (ctx, input) => workflowsService.create(ctx, input.body),
  'workflows.retrieve': (ctx, input) => workflowsService.retrieve(ctx, input.params.id),
  'workflows.update': (ctx, input) => workflowsService.update(ctx, input.params.id, input.body),
  'workflows.delete': async (ctx, input) => {
    await workflowsService.delete(ctx, input.params.id);
    return undefined;
  },
  'workflows.trigger': (ctx, input) => workflowsService.trigger(ctx, input.params.id, input.body),
  'workflows.retrieveRun': (ctx, input) => workflowsService.retrieveRun(ctx, input.params.id, input.params.run_id),
  'workflows.cancelRun': (ctx, input) => workflowsService.cancelRun(ctx, input.params.id, input.params.run_id),
  'workflows.listRuns': (ctx, input) => workflowsService.listRuns(ctx, input.params.id, input.query),
  'events.list': (ctx, input) => eventsService.list(ctx, input.query),
  'webhookEndpoints.list': (ctx, input) => webhookEndpointsService.list(ctx, input.query),
  'webhookEndpoints.create': (ctx, input) => webhookEndpointsService.create(ctx, input.body),
  'webhookEndpoints.retrieve': (ctx, input) => webhookEndpointsService.retrieve(ctx, input.params.id),
  'webhookEndpoints.update': (ctx, input) => webhookEndpointsService.update(ctx, input.params.id, input.body),
  'webhookEndpoints.delete': async (ctx, input) => {
    await webhookEndpointsService.delete(ctx, input.params.id);
    return undefined;
  },
  'webhookEndpoints.listDeliveries': (ctx, input) => webhookEndpointsService.listDeliveries(ctx, input.params.id, input.query),
  'webhookEndpoints.retryDelivery': (ctx, input) => webhookEndpointsService.retryDelivery(ctx, input.params.id, input.params.delivery_id),
  'webhookEndpoints.test': (ctx, input) => testWebhookEndpoint(ctx, input.params.id),
  'webhookEndpoints.replay': (ctx, input) => webhookEndpointsService.replay(ctx, input.params.id, input.body),
  'channels.list': (ctx, input) => channelsService.list(ctx, input.query),
  'channels.create': (ctx, input) => channelsService.create(ctx, input.body),
  'channels.retrieve': (ctx, input) => channelsService.retrieve(ctx, input.params.id),
  'channels.update': (ctx, input) => channelsService.update(ctx, input.params.id, input.body),
  'channels.delete': async (ctx, input) => {
    await channelsService.delete(ctx, input.params.id);
    return undefined;
  },
  'sandbox.inbound': (ctx, input) => {
    // Also refused through /trpc when the sandbox is off (REST does not route it at all).
    if (!ctx.settings.sandboxEnabled) throw new ApiError('not_found', 'The sandbox is not enabled on this server');
    return receiveInbound(ctx, input.body);
  },
};

/** One call of an operation, as either transport hands it over once the edge has admitted it. */
export interface OperationCall {
  /** The caller's account, database and settings. */
  service: ServiceContext;
  /** `{ params?, query?, body? }`, validated against the contract. */
  input: unknown;
  /** The `Idempotency-Key` header, if sent. */
  idempotencyKey: string | undefined;
}

/**
 * Runs an operation and returns its response as both transports send it: the contract's status
 * and the serialized body. A POST with an Idempotency-Key runs at most once (edge/idempotency.ts).
 */
export async function runOperation(operationId: OperationId, call: OperationCall): Promise<OperationResponse & { replayed: boolean }> {
  const operation = endpoints[operationId];
  const handler = handlers[operationId] as (ctx: ServiceContext, input: unknown) => Promise<unknown>;
  const execute = async (service: ServiceContext): Promise<OperationResponse> => {
    const result = await handler(service, call.input);
    return { status: operation.status, body: operation.status === 204 ? '' : serializeResponse(operationId, result) };
  };
  if (operation.method !== 'POST' || call.idempotencyKey === undefined) return answered(await execute(call.service), false);
  const claim = { accountId: call.service.accountId, key: call.idempotencyKey, requestHash: requestHashOf(operationId, call.input) };
  return idempotently(call.service.database, claim, (trx) => execute(withinTransaction(call.service, trx)));
}
