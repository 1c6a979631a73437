import { type EndpointDefinition, type OperationId, buildOpenApiDocument, endpoints } from '@convo/core';
import { type FastifyTRPCPluginOptions, fastifyTRPCPlugin } from '@trpc/server/adapters/fastify';
import { maxHeaderSize } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import { sql } from 'kysely';
import type * as z from 'zod';
import type { DatabaseHandle } from '../db/database.js';
import { RateLimits } from '../edge/rate-limits.js';
import { MAX_BODY_BYTES, acceptJsonBodies, admission } from '../edge/admission.js';
import { consolePlugin } from '../console/plugin.js';
import { requestEnded, requestStarted } from '../crash-policy.js';
import { ApiError, toErrorBody } from '../errors.js';
import { nextUlid } from '../ids.js';
import { EventFeed } from '../services/event-stream.js';
import { type Settings, defaultSettings } from '../settings.js';
import { trpcErrorShape } from '../trpc/error-shape.js';
import { type AppRouter, appRouter } from '../trpc/router.js';
import { validatePart } from '../validation.js';
import { docsPlugin } from './docs-page.js';
import { installDrain } from './drain.js';
import { installRequestLog } from './request-log.js';
import { metaHooks, registerOperationRoutes } from './routes.js';

export interface ServerOptions {
  database: DatabaseHandle;
  /** Defaults to the store that fits the database (memory for SQLite, Postgres otherwise). */
  rateLimits?: RateLimits;
  /** Defaults to defaultSettings(): https-only webhooks, no sandbox. */
  settings?: Settings;
  /** A pino logger, or false for none; `stream` receives its lines (tests read them). */
  logger?: FastifyBaseLogger | boolean | { level: string; stream?: { write(line: string): void } };
  /** Public base address ending in /v1, for the OpenAPI document. */
  publicUrl?: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** `METHOD /path` of every route registered under /v1 (for the OpenAPI drift check). */
    apiRoutes: string[];
    /** Every route the server mounts, as registered (the surface fuzz covers each one). */
    routeTable: { method: string; url: string }[];
  }
}

/**
 * One log line per request, when it completes: id, account, operation, status and duration.
 * Headers are never logged, so keys and signatures stay out of the logs.
 */
class RequestLog extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(_error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    request.log.info(
      {
        requestId: request.id,
        accountId: request.principal?.account.id,
        operation: request.routeOptions.config.operationId,
        method: request.method,
        url: loggedPath(request.url),
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime),
      },
      'request',
    );
  }
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** A request's path as logged: no query string, and no token of a console link (invitation, password reset). */
const loggedPath = (url: string): string =>
  (url.split('?')[0] as string).replace(/^(\/console\/(?:invite|reset-password)\/)[^/]+/, '$1…');

/**
 * The server. A request's path, top to bottom: `onRequest` (edge/admission.ts: key, rate limit,
 * permission) → `preParsing` and the JSON parser (edge/admission.ts: size and depth, while
 * the body is read) → validation against the contract (validation.ts) → the operation
 * (operations.ts, through http/routes.ts or trpc/router.ts) → the service verb. Every error leaves
 * through the one error handler below, in the shape of the transport it came by.
 */
export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const { database } = options;
  const settings = options.settings ?? defaultSettings();
  const rateLimits =
    options.rateLimits ?? RateLimits.create({ database, authFailuresPerMinute: settings.authFailuresPerMinute });
  // Operations this server does not serve: they are neither routed nor documented.
  const disabled = new Set<OperationId>(settings.sandboxEnabled ? [] : ['sandbox.inbound']);
  const admit = admission({ database, rateLimits, settings });

  const app = Fastify({
    logger: options.logger ?? false,
    genReqId: (req) => {
      const sent = req.headers['x-request-id'];
      return typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : `req_${nextUlid()}`;
    },
    requestIdHeader: false,
    // While closing, refusals are ours (http/drain.ts): the contract's body and X-Request-Id.
    return503OnClosing: false,
    bodyLimit: MAX_BODY_BYTES,
    // request.ip, which the per-address guards count by, is the client's only behind a trusted balancer.
    trustProxy: settings.trustedProxies,
    // Slow clients are cut off (README: Timeouts). Node enforces the headers and request timeouts
    // when it checks its connections, so it checks often enough for the shortest of them to hold.
    requestTimeout: settings.requestTimeoutMs,
    keepAliveTimeout: settings.keepAliveTimeoutMs,
    connectionTimeout: settings.idleTimeoutMs,
    http: {
      headersTimeout: Math.min(settings.headersTimeoutMs, settings.requestTimeoutMs),
      connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(settings.headersTimeoutMs / 4))),
    },
    // No path parameter can outgrow the request line, which Node caps at maxHeaderSize (a 400, see
    // answerClientError): an over-long id is then a 404 like any other id that names nothing.
    routerOptions: { maxParamLength: maxHeaderSize },
    // Without a logger the line is not even put together.
    logController: new RequestLog({ disableRequestLogging: !options.logger }),
    // Errors Fastify raises before routing (a malformed percent-encoding) get the contract's
    // error body and X-Request-Id too, after the key check.
    frameworkErrors: async (error, request, reply) => {
      reply.header('x-request-id', request.id);
      try {
        await admit(request, reply);
        throw ApiError.badRequest(
          'path',
          'format',
          error.code === 'FST_ERR_BAD_URL' ? 'The URL is not validly encoded' : 'Malformed request',
        );
      } catch (thrown) {
        return sendError(request, reply, apiErrorOf(thrown, request));
      }
    },
    clientErrorHandler: answerClientError,
  });
  app.decorate('apiRoutes', [] as string[]);
  app.decorate('routeTable', [] as { method: string; url: string }[]);
  app.decorateRequest('principal', null);
  app.decorateRequest('call', null);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      app.routeTable.push({ method, url: route.url });
      if (route.url.startsWith('/v1/') && method !== 'HEAD') app.apiRoutes.push(`${method} ${route.url}`);
    }
  });
  app.setValidatorCompiler(
    ({ schema }) =>
      (data) =>
        validatePart(schema as z.ZodType, data),
  );
  acceptJsonBodies(app);

  app.setErrorHandler((error, request, reply) => sendError(request, reply, apiErrorOf(error, request)));
  app.addHook('onRequest', (request, reply, done) => {
    // Every response carries it, errors included (the error handler keeps headers already set).
    reply.header('x-request-id', request.id);
    // An error nothing handled is logged with the ids of the requests in flight (crash-policy.ts).
    requestStarted(request.id);
    done();
  });
  app.addHook('onResponse', (request, _reply, done) => {
    requestEnded(request.id);
    done();
  });

  installDrain(app);
  installRequestLog(app, database);
  app.addHook('onRequest', admit);
  app.addHook('onSend', (request, reply, payload, done) => {
    // Whatever of a body is still unread when the answer goes (a refusal before reading, a body
    // over the limit, a body a GET carried) is not read: the connection is closed after it.
    if (!request.raw.complete) reply.header('connection', 'close');
    // tRPC answers with a web Response, and one it builds before any procedure runs (a missing
    // Content-Type) is typed as text by default: it is tRPC's JSON envelope like every other.
    if (
      payload instanceof Response &&
      isTrpcUrl(request.url) &&
      payload.headers.get('content-type')?.startsWith('text/plain')
    )
      payload.headers.set('content-type', 'application/json');
    done(null, payload);
  });
  app.setNotFoundHandler(async (request) => {
    throw new ApiError('not_found', `No such path: ${request.method} ${request.url.split('?')[0]}`);
  });

  const feed = new EventFeed({ database, settings }, app.log);
  // Streams end before the server waits for requests in flight: theirs never finish on their own.
  app.addHook('preClose', () => feed.close());
  registerOperationRoutes(app, { disabled, feed });
  await app.register(metaHooks, { database, settings });

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    // Draining: the balancer takes this instance out while it still serves (http/drain.ts).
    if (app.drain.draining) return reply.code(503).send({ status: 'unavailable', reason: 'shutting down' });
    try {
      await sql`select 1`.execute(database.db);
      return { status: 'ready' };
    } catch {
      return reply.code(503).send({ status: 'unavailable', reason: 'database unreachable' });
    }
  });

  const openApi = buildOpenApiDocument({
    exclude: [...disabled],
    ...(options.publicUrl ? { serverUrl: options.publicUrl } : {}),
  });
  const openApiJson = JSON.stringify(openApi);
  app.get('/v1/openapi.json', { config: { public: true } }, async (_request, reply) =>
    reply.type('application/json; charset=utf-8').send(openApiJson),
  );
  await app.register(docsPlugin);

  await app.register(consolePlugin, {
    prefix: '/console',
    database,
    settings,
    staticDir: settings.consoleDir,
    feed,
  });

  await app.register(fastifyTRPCPlugin, {
    prefix: '/trpc',
    trpcOptions: {
      router: appRouter,
      // One procedure per request, so that admission knows which operation it permits.
      allowBatching: false,
      createContext: ({ req, res }) => {
        if (!req.call) throw new Error('A tRPC call ran without admission');
        return { ...req.call, requestId: req.id, reply: res };
      },
      onError: ({ error, req }) => {
        if (error.code === 'INTERNAL_SERVER_ERROR' && !(error.cause instanceof ApiError))
          req.log.error({ err: error.cause ?? error, requestId: req.id }, 'unexpected error');
      },
    } satisfies FastifyTRPCPluginOptions<AppRouter>['trpcOptions'],
  });

  app.addHook('onClose', async () => {
    if (!options.rateLimits) await rateLimits.close();
  });
  return app;
}

/** Whatever was thrown, as the contract's error; the cause of an unexpected one goes to the log. */
function apiErrorOf(error: unknown, request: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error;
  const known = fromFrameworkError(error as FastifyError, uploadPartOf(request));
  if (known) return known;
  request.log.error({ err: error, requestId: request.id }, 'unexpected error');
  return ApiError.serverError(request.id);
}

const isTrpcUrl = (url: string): boolean => url.startsWith('/trpc/') || url.startsWith('/console/trpc/');

/**
 * The one place an error response is written: the contract's body for REST, tRPC's envelope with
 * that body inside for /trpc.
 */
function sendError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  reply.code(error.status).headers(error.headers).type('application/json; charset=utf-8');
  if (isTrpcUrl(request.url)) {
    const path = (request.params as { path?: string } | undefined)?.path;
    return reply.send({ error: trpcErrorShape(error, path) });
  }
  const body = toErrorBody(error);
  request.answeredError = body;
  return reply.send(body);
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
        ? ApiError.badRequest(
            'headers',
            'max_bytes',
            `The request line and headers are larger than ${maxHeaderSize} bytes`,
          )
        : ApiError.badRequest(
            'request',
            'format',
            error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
              ? 'The request did not arrive in time'
              : 'The request is not valid HTTP',
          );
    const body = JSON.stringify(toErrorBody(sent));
    socket.write(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: req_${nextUlid()}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/** Fastify's own errors (body reading, content types, malformed URLs) in the contract's terms. */
/** The multipart part of the upload route a request reached, if it reached one. */
function uploadPartOf(request: FastifyRequest): string | undefined {
  const operationId = (request.routeOptions.config as { operationId?: OperationId } | undefined)?.operationId;
  return operationId ? (endpoints[operationId] as EndpointDefinition).upload?.part : undefined;
}

function fromFrameworkError(error: FastifyError, uploadPart?: string): ApiError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return ApiError.badRequest('body', 'max_bytes', `The body is larger than ${MAX_BODY_BYTES} bytes`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return ApiError.badRequest(
        'body',
        'content_type',
        uploadPart
          ? `Send the body as multipart/form-data with one part, "${uploadPart}"`
          : 'Send the body as JSON with "Content-Type: application/json"',
      );
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return ApiError.badRequest('body', 'json', 'The body is not valid JSON');
  }
  if (error.statusCode === 404) return new ApiError('not_found', 'Not found');
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500)
    return new ApiError('bad_request', 'Malformed request');
  return undefined;
}
