import { type EndpointDefinition, type OperationId, buildOpenApiDocument, endpoints, operationIds } from '@convo/core';
import { fastifyTRPCPlugin } from '@trpc/server/adapters/fastify';
import { createHash } from 'node:crypto';
import { maxHeaderSize } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import { serializerCompiler } from 'fastify-type-provider-zod';
import { sql } from 'kysely';
import type * as z from 'zod';
import type { DatabaseHandle } from '../db/database.js';
import { ApiError, toErrorBody } from '../errors.js';
import { nextUlid } from '../ids.js';
import { HttpInput } from '../trpc/contract-input.js';
import { RateLimits } from '../edge/rate-limits.js';
import { type HttpExchange, IdempotentReplay, type RequestContext, admitRequest, apiErrorOf } from '../trpc/init.js';
import { type AnyTRPCProcedure, TRPCError } from '@trpc/server';
import { appRouter } from '../trpc/router.js';
import { type Settings, defaultSettings } from '../settings.js';
import { renderDocsPage } from './docs-page.js';
import { HOT_OPERATIONS, compileSerializer } from './serializers.js';
import { MAX_BODY_BYTES, RawBody } from './raw-body.js';

export interface ServerOptions {
  database: DatabaseHandle;
  /** Defaults to the store that fits the database (memory for SQLite, Postgres otherwise). */
  rateLimits?: RateLimits;
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
  interface FastifyRequest {
    /** What the procedures told the transport about this REST request. */
    exchange: HttpExchange | null;
    /** The Content-Type header as the client sent it (under /v1 Fastify is shown a neutral one). */
    sentContentType: string | undefined;
  }
}

/**
 * One log line per request, when it completes: id, account, operation, status and duration.
 * Headers are never logged, so keys and signatures stay out of the logs.
 */
class RequestLog extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(_error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    request.log.info(
      {
        requestId: request.id,
        accountId: request.exchange?.accountId,
        operation: request.routeOptions.config && (request.routeOptions.config as { operationId?: string }).operationId,
        method: request.method,
        url: request.url.split('?')[0],
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime),
      },
      'request',
    );
  }
}

/** The body of a request that has none (never written to). */
const NO_BYTES = Buffer.alloc(0);
/** Past this many bytes a request is cut off instead of drained (the 400 names MAX_BODY_BYTES). */
const HARD_BODY_LIMIT = 16 * MAX_BODY_BYTES;
const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;
const underV1 = (url: string) => url === '/v1' || url.startsWith('/v1/') || url.startsWith('/v1?');

/**
 * The HTTP transport: every row of the endpoint table becomes a Fastify route that calls the
 * operation's tRPC procedure. Errors of every kind leave through the one error handler below.
 */
export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const { database } = options;
  const settings = options.settings ?? defaultSettings();
  const rateLimits = options.rateLimits ?? RateLimits.create({ database, authFailuresPerMinute: settings.authFailuresPerMinute });
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
    // No path parameter can outgrow the request line, which Node caps at maxHeaderSize (a 400, see
    // answerClientError): an over-long id is then a 404 like any other id that names nothing.
    routerOptions: { maxParamLength: maxHeaderSize },
    logController: new RequestLog(),
    // Errors Fastify raises before routing (a malformed percent-encoding, an over-long path
    // parameter) get the contract's error body and X-Request-Id too, after the key check.
    frameworkErrors: async (error, request, reply) => {
      let sent: ApiError;
      try {
        if (underV1(request.url)) await authenticateAndCount(contextOf(request));
        sent = ApiError.badRequest('path', 'format', error.code === 'FST_ERR_BAD_URL' ? 'The URL is not validly encoded' : 'Malformed request');
      } catch (thrown) {
        sent = apiErrorOf(thrown) ?? ApiError.serverError(request.id);
      }
      return (reply as FastifyReply).code(sent.status).header('X-Request-Id', request.id).type('application/json; charset=utf-8').send(toErrorBody(sent));
    },
    clientErrorHandler: answerClientError,
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

  app.decorateRequest('exchange', null);
  app.decorateRequest('sentContentType', undefined);

  app.setErrorHandler((error, request, reply) => {
    const apiError = apiErrorOf(error) ?? fromFrameworkError(error as { code?: string; statusCode?: number });
    if (!apiError) request.log.error({ err: error, requestId: request.id }, 'unexpected error');
    const sent = apiError ?? ApiError.serverError(request.id);
    return reply.code(sent.status).headers(sent.headers).type('application/json; charset=utf-8').send(toErrorBody(sent));
  });

  const contextOf = (request: FastifyRequest): RequestContext => ({
    database,
    settings,
    rateLimits,
    requestId: request.id,
    authorization: request.headers.authorization,
    ip: request.ip,
    ...(request.exchange ? { exchange: request.exchange } : {}),
  });

  // Hooks in callback style: an async hook costs a promise per request even when it has nothing to wait for.
  app.addHook('onRequest', (request, reply, done) => {
    // Every response carries it, errors included (the error handler keeps headers already set).
    reply.header('x-request-id', request.id);
    if (!underV1(request.url)) return done();
    // Bodies are decoded, and their Content-Type judged, by the procedure after the key and
    // permission checks (RawBody). Fastify refuses a Content-Type it cannot parse (`json`, an empty
    // one) before any of that, so under /v1 it is shown a neutral one and RawBody gets the sent one.
    request.sentContentType = request.headers['content-type'];
    if (request.sentContentType !== undefined) request.raw.headers['content-type'] = 'application/octet-stream';
    const key = request.headers['idempotency-key'];
    request.exchange = new RestExchange(reply, typeof key === 'string' ? key : undefined);
    done();
  });

  const authenticateAndCount = async (ctx: RequestContext) => {
    await admitRequest(ctx);
  };

  app.setNotFoundHandler(async (request) => {
    // Under /v1 an unknown path is still an API call: the key is checked (and counted) first.
    if (underV1(request.url)) await authenticateAndCount(contextOf(request));
    throw new ApiError('not_found', `No such path: ${request.method} ${request.url.split('?')[0]}`);
  });

  for (const operationId of operationIds) {
    if (!disabled.has(operationId)) registerOperation(app, operationId, endpoints[operationId], contextOf);
  }

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    try {
      await sql`select 1`.execute(database.db);
      return { status: 'ready' };
    } catch {
      return reply.code(503).send({ status: 'unavailable', reason: 'database unreachable' });
    }
  });

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

  app.addHook('onClose', async () => {
    if (!options.rateLimits) await rateLimits.close();
  });

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
  const type = operation.method === 'GET' ? 'query' : 'mutation';
  // The operation's procedure, found once (the router keeps them flat, by path, where tRPC's own
  // getProcedureAtPath reads them): callTRPCProcedure looks it up at every call (an await of its
  // own) and hands the router on in the options that each middleware level copies. The call
  // itself is the one callTRPCProcedure makes.
  const procedure = (appRouter._def.procedures as unknown as Record<string, AnyTRPCProcedure | undefined>)[operationId];
  if (!procedure || procedure._def.type !== type) throw new Error(`No ${type} procedure for operation ${operationId}`);
  app.route({
    method: operation.method,
    url: `/v1${operation.path}`,
    schema: operation.response ? { response: { [operation.status]: operation.response } } : {},
    ...(operation.response && HOT_OPERATIONS.has(operationId) ? { serializerCompiler: hotSerializer(operation.response) } : {}),
    // Only a POST can carry an Idempotency-Key: other routes run no onSend hook at all.
    onSend: operation.method === 'POST' ? (request, reply, payload, done) => storeIdempotentResponse(request, reply, payload, done) : [],
    config: { operationId },
    handler: async (request, reply) => {
      const collected = request.body as { size: number; chunks: Buffer[] } | undefined;
      const bytes = collected ? Buffer.concat(collected.chunks) : NO_BYTES;
      const body = collected ? new RawBody(request.sentContentType, bytes, collected.size > MAX_BODY_BYTES) : undefined;
      const exchange = request.exchange;
      // Only a POST with an Idempotency-Key is compared with an earlier request.
      if (exchange && exchange.idempotencyKey !== undefined && operation.method === 'POST') {
        exchange.requestHash = requestHash(operationId, request.params, request.query, bytes, collected?.size);
      }
      const input = new HttpInput(request.params, request.query, body);
      let result: unknown;
      try {
        // The procedure called as tRPC's own adapters call it: no caller proxy per request.
        result = await procedure({ path: operationId, type, ctx: contextOf(request), getRawInput: async () => input, signal: undefined, batchIndex: 0 });
      } catch (error) {
        const replay = error instanceof TRPCError ? error.cause : error;
        if (!(replay instanceof IdempotentReplay)) throw error;
        // The stored response of the first request with this Idempotency-Key, byte for byte.
        reply.code(replay.status).header('Idempotent-Replayed', 'true');
        if (replay.body === '') return reply.send();
        return reply.type('application/json; charset=utf-8').serializer((payload: unknown) => payload as string).send(replay.body);
      }
      reply.code(operation.status);
      return operation.status === 204 ? reply.send() : result;
    },
  });
}

/** What the procedures tell this REST request's response (one shape for every request). */
class RestExchange implements HttpExchange {
  requestHash = '';
  onResponse: HttpExchange['onResponse'] = undefined;
  accountId: string | undefined = undefined;

  constructor(
    private readonly reply: FastifyReply,
    readonly idempotencyKey: string | undefined,
  ) {}

  setHeader(name: string, value: string): void {
    this.reply.header(name, value);
  }
}

/** The first response to an Idempotency-Key is stored as sent, before the client sees it. */
function storeIdempotentResponse(request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error?: Error | null, payload?: unknown) => void): void {
  const onResponse = request.exchange?.onResponse;
  if (!onResponse) return done(null, payload);
  request.exchange!.onResponse = undefined;
  onResponse(reply.statusCode, typeof payload === 'string' ? payload : '').then(
    () => done(null, payload),
    (error: Error) => done(error),
  );
}

/** The route's serializer compiler: the one compiled serializer for its success status. */
function hotSerializer(schema: z.ZodType) {
  const serialize = compileSerializer(schema);
  return () => serialize;
}

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (a request line and headers over
 * the size limit, malformed HTTP) get the contract's 400 and an X-Request-Id, not Fastify's
 * default 431 or 400 of another shape.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // A reset connection has nobody left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const sent =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? ApiError.badRequest('headers', 'max_bytes', `The request line and headers are larger than ${maxHeaderSize} bytes`)
        : ApiError.badRequest('request', 'format', error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'The request did not arrive in time' : 'The request is not valid HTTP');
    const body = JSON.stringify(toErrorBody(sent));
    socket.write(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: req_${nextUlid()}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
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

/** What makes two requests "the same" for an Idempotency-Key: operation, path, query and body bytes. */
function requestHash(operationId: string, params: unknown, query: unknown, body: Buffer, size: number | undefined): string {
  return createHash('sha256')
    .update(`${operationId}\n${JSON.stringify(params)}\n${JSON.stringify(query)}\n${size ?? 0}\n`)
    .update(body)
    .digest('hex');
}
