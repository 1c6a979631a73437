import { Transform, type TransformCallback } from 'node:stream';
import { type OperationId, type Permission, endpoints } from '@convo/core';
import type { FastifyInstance, FastifyReply, FastifyRequest, preParsingHookHandler } from 'fastify';
import type { DatabaseHandle } from '../db/database.js';
import { ApiError } from '../errors.js';
import { type Principal, accountsService } from '../services/accounts.js';
import type { ServiceContext } from '../services/context.js';
import type { Settings } from '../settings.js';
import { coalesced } from './coalesced-calls.js';
import { type RateLimits, rateLimitHeaders } from './rate-limits.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller, once admission has authenticated the request (API routes only). */
    principal: Principal | null;
    /** What an admitted API call brings to its operation, whichever transport carries it. */
    call: AdmittedCall | null;
  }
  interface FastifyContextConfig {
    /** The endpoint-table operation a route serves. */
    operationId?: OperationId;
    /** Served without a key (the OpenAPI document). */
    public?: boolean;
  }
}

const PERMISSIONS: Record<Principal['key']['type'], readonly Permission[]> = {
  full_access: ['read', 'write'],
  read_only: ['read'],
  webhook: [],
};

/** Requests that are API calls: everything under /v1 (unknown paths included) and every tRPC call. */
const isApiCall = (url: string): boolean => /^\/(v1|trpc)(\/|\?|$)/.test(url);

/** The operation a request calls: the route's own, or for tRPC the procedure named in the path. */
function operationOf(request: FastifyRequest, own: OperationId | undefined): OperationId | undefined {
  if (own) return own;
  const procedure = (request.params as { path?: unknown } | undefined)?.path;
  return request.url.startsWith('/trpc/') && typeof procedure === 'string' && Object.hasOwn(endpoints, procedure)
    ? (procedure as OperationId)
    : undefined;
}

/**
 * The checks of every API call, in the contract's order, before its body is read: authentication
 * (401; failures count against the client's address, never an account), rate limit (429, and the
 * X-RateLimit-* headers on every authenticated response), permission (403). Webhook keys open no
 * operation at all, so they are refused before they are counted against their account.
 */
export function admission(deps: { database: DatabaseHandle; rateLimits: RateLimits; settings: Settings }) {
  const { database, rateLimits, settings } = deps;
  // Requests with one Authorization header share lookups of the key (coalesced).
  const lookUp = coalesced((authorization) => accountsService.authenticate({ database }, authorization));

  async function authenticate(request: FastifyRequest): Promise<Principal> {
    try {
      const { authorization } = request.headers;
      if (authorization === undefined) return await accountsService.authenticate({ database }, undefined);
      return (await lookUp(authorization)).result;
    } catch (error) {
      if (error instanceof ApiError && error.code === 'unauthorized') await rateLimits.authenticationFailed(request.ip);
      throw error;
    }
  }

  async function admitCall(request: FastifyRequest, reply: FastifyReply, own: OperationId | undefined): Promise<void> {
    const principal = await authenticate(request);
    request.principal = principal;
    const idempotencyKey = request.headers['idempotency-key'];
    request.call = {
      service: { database, accountId: principal.account.id, settings },
      idempotencyKey: typeof idempotencyKey === 'string' ? idempotencyKey : undefined,
    };
    const { id, rateLimit } = principal.account;
    // Webhook keys are refused before counting: a signing secret used by mistake must not spend the account's quota.
    const webhookKey = principal.key.type === 'webhook';
    reply.headers(
      rateLimitHeaders(webhookKey ? await rateLimits.peek(id, rateLimit) : await rateLimits.consume(id, rateLimit)),
    );
    // `/v1/contacts/` matches `/v1/contacts/:id` with an empty id: it names no resource and no
    // operation, so it is an unknown path (404 whatever the key's type), as the 404 handler answers.
    if (hasEmptyParam(request))
      throw new ApiError('not_found', `No such path: ${request.method} ${request.url.split('?')[0]}`);
    const operationId = operationOf(request, own);
    if (webhookKey) {
      if (operationId)
        throw ApiError.forbidden(
          'Webhook keys only sign webhook deliveries; use a full-access or read-only key for the API',
        );
      return;
    }
    const permission = operationId && endpoints[operationId].permission;
    if (permission && !PERMISSIONS[principal.key.type].includes(permission)) {
      throw ApiError.forbidden(`This ${principal.key.type.replace('_', '-')} key cannot ${permission}`);
    }
  }

  return async function admit(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // routeOptions is built anew at each read: read once.
    const { config } = request.routeOptions;
    if (!config.public && isApiCall(request.url)) await admitCall(request, reply, config.operationId);
    // tRPC serves queries by GET and mutations by POST; its adapter cannot even represent another
    // method such as TRACE (a web Request refuses it), so another is refused here.
    if (TRPC_URL.test(request.url) && !TRPC_METHODS.has(request.method)) {
      throw ApiError.badRequest('method', 'enum', 'Queries are called with GET, mutations with POST');
    }
    // An unknown path stays a 404, whatever it holds.
    if (!request.is404) refuseUnreadableParams(request);
  };
}

const TRPC_URL = /^\/(console\/)?trpc(\/|\?|$)/;
const TRPC_METHODS = new Set(['GET', 'HEAD', 'POST']);

const paramsOf = (request: FastifyRequest): [string, unknown][] =>
  Object.entries((request.params as Record<string, unknown> | undefined) ?? {});

const hasEmptyParam = (request: FastifyRequest): boolean => paramsOf(request).some(([, value]) => value === '');

/** U+0000, or a surrogate not in a pair: no id holds one, and Postgres cannot even compare text with a NUL. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const unreadable = (value: string): boolean => value.includes('\u0000') || LONE_SURROGATE.test(value);

/**
 * The validation every route gets, whoever serves it (CONTRACT: General, strings must be valid
 * Unicode): a path parameter holding U+0000 or a lone surrogate is 400 `pattern`, before anything
 * looks it up. Runs after the key checks, as validation follows them.
 */
function refuseUnreadableParams(request: FastifyRequest): void {
  for (const [name, value] of paramsOf(request)) {
    if (typeof value === 'string' && unreadable(value)) {
      const field = name === '*' ? 'path' : name;
      throw ApiError.badRequest(field, 'pattern', `${field} must not hold U+0000 or an unpaired surrogate`);
    }
  }
}

/** The service context of the caller's account and the `Idempotency-Key` header as sent. */
export interface AdmittedCall {
  service: ServiceContext;
  idempotencyKey: string | undefined;
}

/** The call admission made of this request: every /v1 route runs with one. */
export const admitted = (request: FastifyRequest): AdmittedCall => {
  const call = request.call;
  if (!call) throw new Error('An API call ran without admission');
  return call;
};

// The body: JSON only, within its size and depth, refused while it is read.

/** Bodies larger than CONTRACT's limit are refused while they are read. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Deeper JSON is refused while it is read: nothing in the contract nests more than a few levels. */
export const MAX_JSON_DEPTH = 32;

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Fails the stream as soon as a body's JSON nests past MAX_JSON_DEPTH, so JSON.parse, which recurses and holds
 * the event loop, never sees it. Brackets inside strings do not count; malformed JSON is left to the parser.
 */
export class JsonDepthLimit extends Transform {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** Bytes received so far: Fastify compares it with Content-Length and bodyLimit. */
  receivedEncodedLength = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.receivedEncodedLength += chunk.length;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) this.inString = false;
      } else if (byte === QUOTE) {
        this.inString = true;
      } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
        if (++this.depth > MAX_JSON_DEPTH) {
          callback(ApiError.badRequest('body', 'json', `The body nests deeper than ${MAX_JSON_DEPTH} levels`));
          return;
        }
      } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
        this.depth--;
      }
    }
    callback(null, chunk);
  }
}

/**
 * Reads every JSON body through JsonDepthLimit. The limiter has a listener of its own because Fastify listens
 * only while it reads the body, and an unheard `error` event ends the process. Not `stream.pipeline`: it would
 * destroy the request, and with it the socket the 400 is written to.
 */
export const limitJsonDepth: preParsingHookHandler = (request, _reply, payload, done) => {
  const type = request.headers['content-type'];
  if (typeof type !== 'string' || !/json/i.test(type)) return done(null, payload);
  const limiter = new JsonDepthLimit();
  limiter.on('error', ignoreAnswered);
  // pipe() does not pass the source's errors on: an aborted request must end the limiter so its reader is told.
  payload.once('error', (error) => limiter.destroy(error));
  done(null, payload.pipe(limiter));
};

/** The error of a request already answered, or answered through Fastify's own listener. */
function ignoreAnswered(): void {}

/** Strict UTF-8: a body that is not valid UTF-8 is malformed, not silently repaired. */
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON bodies only (anything else is 400 `content_type`), within MAX_BODY_BYTES; an empty body counts as none. */
export function acceptJsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES },
    (_request, body: Buffer, done) => {
      if (body.length === 0) return done(null, undefined);
      try {
        done(null, JSON.parse(utf8.decode(body)));
      } catch {
        done(ApiError.badRequest('body', 'json', 'The body is not valid JSON'), undefined);
      }
    },
  );
  app.addHook('preParsing', limitJsonDepth);
}
