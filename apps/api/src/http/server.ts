import { type EndpointDefinition, type OperationId, buildOpenApiDocument, endpoints, operationIds } from '@convo/core';
import { fastifyTRPCPlugin } from '@trpc/server/adapters/fastify';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { serializerCompiler } from 'fastify-type-provider-zod';
import { monotonicFactory } from 'ulid';
import type { DatabaseHandle } from '../db/database.js';
import { ApiError, toErrorBody } from '../errors.js';
import { HttpInput } from '../trpc/contract-input.js';
import { type RequestContext, apiErrorOf, authenticate } from '../trpc/init.js';
import { appRouter, createCaller } from '../trpc/router.js';
import { type Settings, defaultSettings } from '../settings.js';
import { renderDocsPage } from './docs-page.js';
import { MAX_BODY_BYTES, RawBody } from './raw-body.js';

export interface ServerOptions {
  database: DatabaseHandle;
  /** Defaults to defaultSettings(): https-only webhooks, no sandbox. */
  settings?: Settings;
  /** A pino logger, or false for none. */
  logger?: FastifyBaseLogger | boolean | { level: string };
  /** Public base address ending in /v1, for the OpenAPI document. */
  publicUrl?: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** `METHOD /path` of every route registered under /v1 (for the OpenAPI drift check). */
    apiRoutes: string[];
  }
}

/** Past this many bytes a request is cut off instead of drained (the 400 names MAX_BODY_BYTES). */
const HARD_BODY_LIMIT = 16 * MAX_BODY_BYTES;
const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;
const nextUlid = monotonicFactory();
const underV1 = (url: string) => url === '/v1' || url.startsWith('/v1/') || url.startsWith('/v1?');

/**
 * The HTTP transport: every row of the endpoint table becomes a Fastify route that calls the
 * operation's tRPC procedure. Errors of every kind leave through the one error handler below.
 */
export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const { database } = options;
  const settings = options.settings ?? defaultSettings();
  // Operations this server does not serve: they are neither routed nor documented.
  const disabled = new Set<OperationId>(settings.sandboxEnabled ? [] : ['sandbox.inbound']);
  const app = Fastify({
    logger: options.logger ?? false,
    genReqId: (req) => {
      const sent = req.headers['x-request-id'];
      return typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : `req_${nextUlid()}`;
    },
    requestIdHeader: false,
    bodyLimit: HARD_BODY_LIMIT,
    routerOptions: { maxParamLength: 4096 },
    // Errors Fastify raises before routing (a malformed percent-encoding, an over-long path
    // parameter) get the contract's error body and X-Request-Id too, after the key check.
    frameworkErrors: async (error, request, reply) => {
      let sent: ApiError;
      try {
        if (underV1(request.url)) await authenticate(contextOf(request));
        sent = new ApiError('bad_request', error.code === 'FST_ERR_BAD_URL' ? 'The URL is not validly encoded' : 'Malformed request');
      } catch (thrown) {
        sent = apiErrorOf(thrown) ?? ApiError.serverError(request.id);
      }
      return (reply as FastifyReply).code(sent.status).header('X-Request-Id', request.id).type('application/json; charset=utf-8').send(toErrorBody(sent));
    },
  });
  app.setSerializerCompiler(serializerCompiler);
  app.decorate('apiRoutes', [] as string[]);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) if (route.url.startsWith('/v1/') && method !== 'HEAD') app.apiRoutes.push(`${method} ${route.url}`);
  });

  // Bodies are collected undecoded (see RawBody) whatever their content type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => {
    const chunks: Buffer[] = [];
    let size = 0;
    payload.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    payload.on('end', () => done(null, { size, chunks }));
    payload.on('error', (error) => done(error, undefined));
  });

  app.addHook('onSend', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });

  app.setErrorHandler((error, request, reply) => {
    const apiError = apiErrorOf(error) ?? fromFrameworkError(error as { code?: string; statusCode?: number });
    if (!apiError) request.log.error({ err: error, requestId: request.id }, 'unexpected error');
    const sent = apiError ?? ApiError.serverError(request.id);
    return reply.code(sent.status).headers(sent.headers).type('application/json; charset=utf-8').send(toErrorBody(sent));
  });

  const contextOf = (request: FastifyRequest): RequestContext => ({
    database,
    settings,
    requestId: request.id,
    authorization: request.headers.authorization,
  });

  app.setNotFoundHandler(async (request) => {
    // Under /v1 an unknown path is still an API call: the key is checked first.
    if (underV1(request.url)) await authenticate(contextOf(request));
    throw new ApiError('not_found', `No such path: ${request.method} ${request.url.split('?')[0]}`);
  });

  for (const operationId of operationIds) {
    if (!disabled.has(operationId)) registerOperation(app, operationId, endpoints[operationId], contextOf);
  }

  const openApi = buildOpenApiDocument({ exclude: [...disabled], ...(options.publicUrl ? { serverUrl: options.publicUrl } : {}) });
  const openApiJson = JSON.stringify(openApi);
  app.get('/v1/openapi.json', async (_request, reply) => reply.type('application/json; charset=utf-8').send(openApiJson));
  const docsHtml = renderDocsPage(openApi);
  app.get('/docs', async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
      .header('X-Content-Type-Options', 'nosniff')
      .header('Referrer-Policy', 'no-referrer')
      .send(docsHtml),
  );

  await app.register(fastifyTRPCPlugin, {
    prefix: '/trpc',
    trpcOptions: { router: appRouter, createContext: ({ req }: { req: FastifyRequest }) => contextOf(req) },
  });

  return app;
}

function registerOperation(
  app: FastifyInstance,
  operationId: OperationId,
  operation: EndpointDefinition,
  contextOf: (request: FastifyRequest) => RequestContext,
) {
  const path = operationId.split('.');
  app.route({
    method: operation.method,
    url: `/v1${operation.path}`,
    schema: operation.response ? { response: { [operation.status]: operation.response } } : {},
    handler: async (request, reply) => {
      const caller = createCaller(contextOf(request)) as unknown as Record<string, unknown>;
      const procedure = path.reduce<unknown>((node, segment) => (node as Record<string, unknown>)[segment], caller) as (input: unknown) => Promise<unknown>;
      const collected = request.body as { size: number; chunks: Buffer[] } | undefined;
      const body = collected ? new RawBody(request.headers['content-type'], Buffer.concat(collected.chunks), collected.size > MAX_BODY_BYTES) : undefined;
      const result = await procedure(new HttpInput(request.params, request.query, body));
      reply.code(operation.status);
      return operation.status === 204 ? reply.send() : result;
    },
  });
}

/** Fastify's own errors (body parsing, malformed URLs) in the contract's terms. */
function fromFrameworkError(error: { code?: string; statusCode?: number }): ApiError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return ApiError.badRequest('body', 'max_bytes', `The body is larger than ${MAX_BODY_BYTES} bytes`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return ApiError.badRequest('body', 'content_type', 'Send the body as JSON with "Content-Type: application/json"');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return ApiError.badRequest('body', 'json', 'The body is not valid JSON');
  }
  if (error.statusCode === 404) return new ApiError('not_found', 'Not found');
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return new ApiError('bad_request', 'Malformed request');
  }
  return undefined;
}
