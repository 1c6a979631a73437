import { createHash } from 'node:crypto';
import {
  type EndpointDefinition,
  type OperationId,
  type OperationParsedInput,
  type OperationResult,
  type StreamOperationId,
  endpoints,
} from '@convo/core';
import { ReferenceGone } from './db/transactions.js';
import { ApiError, toErrorBody } from './errors.js';
import type { IdempotencyClaim, StoredResponse } from './repositories/idempotency.js';
import { IDEMPOTENCY_TTL_MS, idempotencyKeysRepository } from './repositories/idempotency.js';
import type { Executor } from './repositories/tenant.js';
import { serializeResponse } from './serializers.js';
import { receiveInbound } from './services/channel-inbound.js';
import { channelsService } from './services/channels.js';
import { templatesService } from './services/templates.js';
import { contactsService } from './services/contacts.js';
import { type ServiceContext, transaction } from './services/context.js';
import { conversationsService } from './services/conversations.js';
import { eventsService } from './services/events.js';
import { type StoredUpload, filesService } from './services/files.js';
import { messagesService } from './services/messages.js';
import { ordersService } from './services/orders.js';
import { tagsService } from './services/tags.js';
import { testWebhookEndpoint } from './services/webhook-deliveries.js';
import { webhookEndpointsService } from './services/webhooks.js';
import { workflowsService } from './services/workflows.js';

type Handler<K extends OperationId> = (
  ctx: ServiceContext,
  input: OperationParsedInput<K>,
) => Promise<OperationResult<K>>;

/** A verb that answers nothing: 204. */
const noContent = async (done: Promise<void>): Promise<undefined> => {
  await done;
};

/**
 * One handler per operation of the endpoint table, each a call to a service verb. The type
 * makes the server fail to compile when the table has an operation without a handler here.
 */
export type Handlers = { [K in CalledOperationId]: Handler<K> };

/** The operations answered by one call; a stream's route follows the event feed (http/event-stream.ts). */
export type CalledOperationId = Exclude<OperationId, StreamOperationId>;

export const handlers: Handlers = {
  'conversations.list': (ctx, input) => conversationsService.list(ctx, input.query),
  'conversations.create': (ctx, input) => conversationsService.create(ctx, input.body),
  'conversations.retrieve': (ctx, input) => conversationsService.retrieve(ctx, input.params.id),
  'conversations.update': (ctx, input) => conversationsService.update(ctx, { id: input.params.id, body: input.body }),
  'conversations.listMessages': (ctx, input) =>
    conversationsService.listMessages(ctx, { id: input.params.id, query: input.query }),
  'messages.send': (ctx, input) => messagesService.send(ctx, input.body),
  'messages.retrieve': (ctx, input) => messagesService.retrieve(ctx, input.params.id),
  // The route streamed the part into storage first (http/file-routes.ts): the body holds what it stored.
  'files.create': (ctx, input) => filesService.create(ctx, (input.body as unknown as { file: StoredUpload }).file),
  'files.retrieve': (ctx, input) => filesService.retrieve(ctx, input.params.id),
  // The route streams the bytes (http/file-routes.ts); as an operation, it answers the file's record.
  'files.content': (ctx, input) => filesService.retrieve(ctx, input.params.id),
  'contacts.list': (ctx, input) => contactsService.list(ctx, input.query),
  'contacts.create': (ctx, input) => contactsService.create(ctx, input.body),
  'contacts.retrieve': (ctx, input) => contactsService.retrieve(ctx, input.params.id),
  'contacts.update': (ctx, input) => contactsService.update(ctx, { id: input.params.id, body: input.body }),
  'contacts.delete': (ctx, input) => noContent(contactsService.delete(ctx, input.params.id)),
  'contacts.tags.add': (ctx, input) => contactsService.addTag(ctx, { id: input.params.id, tag: input.body.tag }),
  'contacts.tags.remove': (ctx, input) =>
    contactsService.removeTag(ctx, { id: input.params.id, tag: input.params.tag }),
  'tags.list': (ctx, input) => tagsService.list(ctx, input.query),
  'tags.update': (ctx, input) => tagsService.update(ctx, { tag: input.params.tag, body: input.body }),
  'tags.delete': (ctx, input) => noContent(tagsService.delete(ctx, input.params.tag)),
  'orders.list': (ctx, input) => ordersService.list(ctx, input.query),
  'orders.create': (ctx, input) => ordersService.create(ctx, input.body),
  'orders.retrieve': (ctx, input) => ordersService.retrieve(ctx, input.params.id),
  'orders.update': (ctx, input) => ordersService.update(ctx, { id: input.params.id, body: input.body }),
  'workflows.list': (ctx, input) => workflowsService.list(ctx, input.query),
  'workflows.create': (ctx, input) => workflowsService.create(ctx, input.body),
  'workflows.retrieve': (ctx, input) => workflowsService.retrieve(ctx, input.params.id),
  'workflows.update': (ctx, input) => workflowsService.update(ctx, { id: input.params.id, body: input.body }),
  'workflows.delete': (ctx, input) => noContent(workflowsService.delete(ctx, input.params.id)),
  'workflows.trigger': (ctx, input) => workflowsService.trigger(ctx, { workflowId: input.params.id, body: input.body }),
  'workflows.retrieveRun': (ctx, input) =>
    workflowsService.retrieveRun(ctx, { workflowId: input.params.id, runId: input.params.run_id }),
  'workflows.cancelRun': (ctx, input) =>
    workflowsService.cancelRun(ctx, { workflowId: input.params.id, runId: input.params.run_id }),
  'workflows.listRuns': (ctx, input) =>
    workflowsService.listRuns(ctx, { workflowId: input.params.id, query: input.query }),
  'events.list': (ctx, input) => eventsService.list(ctx, input.query),
  'webhookEndpoints.list': (ctx, input) => webhookEndpointsService.list(ctx, input.query),
  'webhookEndpoints.create': (ctx, input) => webhookEndpointsService.create(ctx, input.body),
  'webhookEndpoints.retrieve': (ctx, input) => webhookEndpointsService.retrieve(ctx, input.params.id),
  'webhookEndpoints.update': (ctx, input) =>
    webhookEndpointsService.update(ctx, { id: input.params.id, body: input.body }),
  'webhookEndpoints.delete': (ctx, input) => noContent(webhookEndpointsService.delete(ctx, input.params.id)),
  'webhookEndpoints.listDeliveries': (ctx, input) =>
    webhookEndpointsService.listDeliveries(ctx, { endpointId: input.params.id, query: input.query }),
  'webhookEndpoints.retryDelivery': (ctx, input) =>
    webhookEndpointsService.retryDelivery(ctx, { endpointId: input.params.id, deliveryId: input.params.delivery_id }),
  'webhookEndpoints.test': (ctx, input) => testWebhookEndpoint(ctx, input.params.id),
  'webhookEndpoints.replay': (ctx, input) =>
    webhookEndpointsService.replay(ctx, { endpointId: input.params.id, body: input.body }),
  'channels.list': (ctx, input) => channelsService.list(ctx, input.query),
  'channels.create': (ctx, input) => channelsService.create(ctx, input.body),
  'channels.retrieve': (ctx, input) => channelsService.retrieve(ctx, input.params.id),
  'channels.update': (ctx, input) => channelsService.update(ctx, { id: input.params.id, body: input.body }),
  'channels.listTemplates': (ctx, input) => templatesService.list(ctx, { id: input.params.id, query: input.query }),
  'channels.delete': (ctx, input) => noContent(channelsService.delete(ctx, input.params.id)),
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

/** What an operation answered, as both transports send it: status, body ('' for none), and whether it was replayed. */
export interface OperationResponse extends StoredResponse {
  replayed: boolean;
}

/** Every response is built here, field by field: the route handler sees one object shape (one set of inline caches). */
const response = ({ status, body }: StoredResponse, replayed: boolean): OperationResponse => ({
  status,
  body,
  replayed,
});

const HEADER = 'Idempotency-Key';

/**
 * Runs an operation and returns its response as both transports send it: the contract's status
 * and the serialized body. A POST with an Idempotency-Key runs at most once (idempotently).
 */
export async function runOperation(operationId: CalledOperationId, call: OperationCall): Promise<OperationResponse> {
  const operation = endpoints[operationId];
  const handler = handlers[operationId] as (ctx: ServiceContext, input: unknown) => Promise<unknown>;
  const execute = async (service: ServiceContext): Promise<StoredResponse> => {
    const result = await handler(service, call.input);
    return { status: operation.status, body: operation.status === 204 ? '' : serializeResponse(operationId, result) };
  };
  const key = operation.method === 'POST' ? call.idempotencyKey : undefined;
  if (key === undefined) return response(await execute(call.service), false);
  const claim = {
    accountId: call.service.accountId,
    key,
    requestHash: requestHashOf(operationId, hashedInput(operation, call.input)),
  };
  return idempotently(call.service, claim, execute);
}

/** An upload's input without the id its bytes were stored under, which is new at every request. */
function hashedInput(operation: EndpointDefinition, input: unknown): unknown {
  if (!operation.upload) return input;
  const { body, ...rest } = input as { body: Record<string, { id?: string }> };
  const { id: _, ...upload } = body[operation.upload.part] ?? {};
  return { ...rest, body: { [operation.upload.part]: upload } };
}

/** What makes two requests "the same" for a key: the operation and its whole input. */
const requestHashOf = (operationId: string, input: unknown): string =>
  createHash('sha256').update(operationId).update('\n').update(JSON.stringify(input)).digest('hex');

/** An operation's error, marked so that the response it caused is kept like any other. */
class RefusedByOperation extends Error {
  constructor(readonly apiError: ApiError) {
    super(apiError.message);
  }
}

/** The operation's own answer in an error: its refusal, or a 404 for what a concurrent delete removed. */
const refusalIn = (error: unknown): ApiError | undefined =>
  error instanceof RefusedByOperation ? error.apiError : error instanceof ReferenceGone ? error : undefined;

/**
 * Runs a POST that carries an `Idempotency-Key` at most once per account and key for 24 hours, as
 * Stripe does. The key is claimed by inserting its row in the same transaction as the operation,
 * and the response stored there before commit: a duplicate that arrives meanwhile blocks on that
 * row (Postgres waits for the first transaction; SQLite's one connection runs transactions in
 * turn) and then finds the stored response, which it replays. A 5xx rolls back with everything
 * else, so the request can be retried; an error the operation itself answered (404, a refused
 * transition) is stored like a success. The same key with another request is 400.
 */
async function idempotently(
  ctx: ServiceContext,
  claim: IdempotencyClaim,
  execute: (tx: ServiceContext) => Promise<StoredResponse>,
): Promise<OperationResponse> {
  if (claim.key.length === 0) throw ApiError.badRequest(HEADER, 'min_length', 'Idempotency-Key must not be empty');
  if (claim.key.length > 255) {
    throw ApiError.badRequest(HEADER, 'max_length', 'Idempotency-Key must have at most 255 characters');
  }
  try {
    return await transaction(ctx, async (tx) => {
      const stored = await claimKey(tx.database.db, claim);
      if (stored) return response(stored, true);
      let answer: StoredResponse;
      try {
        answer = await execute(tx);
      } catch (error) {
        throw error instanceof ApiError && error.status < 500 ? new RefusedByOperation(error) : error;
      }
      await idempotencyKeysRepository.storeResponse(tx.database.db, claim, answer);
      return response(answer, false);
    });
  } catch (error) {
    // A 404 for what a concurrent delete removed is the operation's answer too (db/transactions.ts
    // tells it only once the transaction is rolled back).
    const sent = refusalIn(error);
    if (!sent) throw error;
    // The operation's own changes are rolled back; what it answered is kept, unless a duplicate
    // that ran meanwhile already stored its own answer.
    const kept = { status: sent.status, body: JSON.stringify(toErrorBody(sent)) };
    await idempotencyKeysRepository.insertResponse(ctx.database.db, claim, kept);
    throw sent;
  }
}

/** Takes the key for this request, or returns the response stored for it (400 for another request). */
async function claimKey(trx: Executor, claim: IdempotencyClaim): Promise<StoredResponse | undefined> {
  if (await idempotencyKeysRepository.claim(trx, claim)) return undefined;
  const row = await idempotencyKeysRepository.find(trx, claim.accountId, claim.key);
  if (!row) throw new Error('An idempotency key neither inserted nor found');
  if (Date.parse(row.created_at) < Date.now() - IDEMPOTENCY_TTL_MS) {
    // Expired but not yet pruned: the key is free again.
    await idempotencyKeysRepository.delete(trx, claim.accountId, claim.key);
    await idempotencyKeysRepository.claim(trx, claim);
    return undefined;
  }
  if (row.request_hash !== claim.requestHash) {
    const message = 'This Idempotency-Key was used with a different request in the last 24 hours';
    throw ApiError.badRequest(HEADER, 'idempotency_key', message);
  }
  return { status: row.response_status as number, body: row.response_body ?? '' };
}
