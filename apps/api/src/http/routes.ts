import { type EndpointDefinition, type OperationId, endpoints, operationIds } from '@convo/core';
import type { FastifyInstance, FastifyPluginAsync, preValidationHookHandler } from 'fastify';
import * as z from 'zod';
import type { DatabaseHandle } from '../db/database.js';
import { MAX_BODY_BYTES, admitted } from '../edge/admission.js';
import { type CalledOperationId, runOperation } from '../operations.js';
import type { EventFeed } from '../services/event-stream.js';
import { registerStreamRoute } from './event-stream.js';
import { registerDownloadRoute, registerUploadRoute } from './file-routes.js';
import { channelInboundService } from '../services/channel-inbound.js';
import type { Settings } from '../settings.js';
import { querySchemaOf } from '../validation.js';

/** Query parameters the schema wants as numbers: their strings are converted before validation. */
function numericKeys(schema: z.ZodType | undefined): Set<string> {
  if (!schema) return new Set();
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as {
    properties?: Record<string, { type?: string }>;
  };
  return new Set(
    Object.entries(json.properties ?? {})
      .filter(([, property]) => property.type === 'integer' || property.type === 'number')
      .map(([name]) => name),
  );
}

/**
 * Before validation: `?limit=10` becomes 10 (anything that is not a plain decimal stays a string
 * and fails as `type`), and a request without a body is validated as an empty object, so its
 * missing fields are named one by one.
 */
function prepareInput(operation: EndpointDefinition): preValidationHookHandler | undefined {
  const numeric = numericKeys(operation.query);
  // Nothing to prepare (a read by id): no hook to run.
  if (numeric.size === 0 && !operation.body) return undefined;
  return (request, _reply, done) => {
    if (numeric.size > 0 && request.query && typeof request.query === 'object') {
      // fromEntries defines every name as an own property: `?__proto__=1` stays an (unknown) parameter.
      request.query = Object.fromEntries(
        Object.entries(request.query).map(([name, value]) => [
          name,
          numeric.has(name) && typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value,
        ]),
      );
    }
    if (operation.body && request.body === undefined) request.body = {};
    done();
  };
}

/**
 * The REST transport: every row of the endpoint table becomes a route under /v1 whose schema is
 * the contract's (validated by the server's validator compiler) and whose handler runs the
 * operation. Admission (key, rate limit, permission) has happened in the edge's hooks.
 */
export function registerOperationRoutes(
  app: FastifyInstance,
  deps: { disabled: ReadonlySet<OperationId>; feed: EventFeed },
): void {
  for (const operationId of operationIds) {
    if (deps.disabled.has(operationId)) continue;
    const operation: EndpointDefinition = endpoints[operationId];
    if (operation.upload) {
      registerUploadRoute(app, operationId, operation);
      continue;
    }
    if (operation.download) {
      registerDownloadRoute(app, operationId, operation);
      continue;
    }
    if (operation.stream) {
      registerStreamRoute(app, operationId, operation, deps.feed);
      continue;
    }
    const preValidation = prepareInput(operation);
    app.route({
      method: operation.method,
      url: `/v1${operation.path}`,
      schema: {
        ...(operation.params ? { params: operation.params } : {}),
        querystring: querySchemaOf(operation),
        ...(operation.body ? { body: operation.body } : {}),
      },
      config: { operationId },
      ...(preValidation ? { preValidation } : {}),
      handler: async (request, reply) => {
        // Every route runs this one closure, whose inline caches V8 shares: objects of one shape
        // (no spreads of what differs by operation) keep them off V8's slow path.
        const input = {
          params: operation.params ? request.params : undefined,
          query: request.query,
          body: operation.body ? request.body : undefined,
        };
        const call = admitted(request);
        const response = await runOperation(operationId as CalledOperationId, {
          service: call.service,
          input,
          idempotencyKey: call.idempotencyKey,
        });
        reply.code(response.status);
        if (response.replayed) reply.header('Idempotent-Replayed', 'true');
        if (response.body === '') return reply.send();
        return reply.type('application/json; charset=utf-8').send(response.body);
      },
    });
  }
}

// Meta's webhooks -----------------------------------------------------------------------------------------------------

/** Where Meta's webhooks come in, outside /v1 and without an API key: the channel's app secret signs them. */
export const META_HOOKS_PATH = '/hooks/meta/:channel_id';

/**
 * The ingress of Meta's webhooks (CONTRACT: Channels). The body is read as raw bytes (this
 * plugin's own parser), for the service to check its signature before anything is parsed; a
 * signed body is answered 200 once it is stored.
 */
export const metaHooks: FastifyPluginAsync<{ database: DatabaseHandle; settings: Settings }> = async (app, deps) => {
  const ctx = { database: deps.database, settings: deps.settings };

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) =>
    done(null, body),
  );

  app.get<{ Params: { channel_id: string }; Querystring: Record<string, string | string[] | undefined> }>(
    META_HOOKS_PATH,
    async (request, reply) => {
      const { 'hub.mode': mode, 'hub.verify_token': token, 'hub.challenge': challenge } = request.query;
      const channelId = request.params.channel_id;
      const answer = await channelInboundService.verify(ctx, { channelId, mode, token, challenge });
      return reply.type('text/plain; charset=utf-8').send(answer);
    },
  );

  app.post<{ Params: { channel_id: string } }>(META_HOOKS_PATH, async (request, reply) => {
    const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const signature = request.headers['x-hub-signature-256'];
    await channelInboundService.receive(ctx, { channelId: request.params.channel_id, rawBody, signature });
    return reply.type('text/plain; charset=utf-8').send('EVENT_RECEIVED');
  });
};
