import { type OperationId, type Permission, endpoints } from '@convo/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { DatabaseHandle } from '../db/database.js';
import { ApiError } from '../errors.js';
import { type Principal, accountsService } from '../services/accounts.js';
import type { ServiceContext } from '../services/context.js';
import type { Settings } from '../settings.js';
import { type RateLimits, rateLimitHeaders } from './rate-limits.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller, once admission has authenticated the request (API routes only). */
    principal: Principal | null;
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
  return request.url.startsWith('/trpc/') && typeof procedure === 'string' && Object.hasOwn(endpoints, procedure) ? (procedure as OperationId) : undefined;
}

/**
 * The checks of every API call, in the contract's order, before its body is read: authentication
 * (401; failures count against the client's address, never an account), rate limit (429, and the
 * X-RateLimit-* headers on every authenticated response), permission (403). Webhook keys open no
 * operation at all, so they are refused before they are counted against their account.
 */
export function admission(deps: { database: DatabaseHandle; rateLimits: RateLimits }) {
  const { database, rateLimits } = deps;

  async function authenticate(request: FastifyRequest): Promise<Principal> {
    try {
      return await accountsService.authenticate(database, request.headers.authorization);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'unauthorized') await rateLimits.authenticationFailed(request.ip);
      throw error;
    }
  }

  return async function admit(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // routeOptions is built anew at each read: read once.
    const { config } = request.routeOptions;
    if (config.public || !isApiCall(request.url)) return;
    const principal = await authenticate(request);
    request.principal = principal;
    const operationId = operationOf(request, config.operationId);
    if (principal.key.type === 'webhook') {
      // Refused before counting: a signing secret used by mistake must not spend the account's quota.
      reply.headers(rateLimitHeaders(await rateLimits.peek(principal.account.id, principal.account.rateLimit)));
      if (operationId) throw ApiError.forbidden('Webhook keys only sign webhook deliveries; use a full-access or read-only key for the API');
      return;
    }
    reply.headers(rateLimitHeaders(await rateLimits.consume(principal.account.id, principal.account.rateLimit)));
    const permission = operationId && endpoints[operationId].permission;
    if (permission && !PERMISSIONS[principal.key.type].includes(permission)) {
      throw ApiError.forbidden(`This ${principal.key.type.replace('_', '-')} key cannot ${permission}`);
    }
  };
}

/**
 * What an admitted API call brings to its operation, whichever transport carries it: the service
 * context of the caller's account and the `Idempotency-Key` header as sent.
 */
export function admittedCall(
  request: FastifyRequest,
  deps: { database: DatabaseHandle; settings: Settings },
): { service: ServiceContext; idempotencyKey: string | undefined } {
  if (!request.principal) throw new Error('An API call ran without admission');
  const key = request.headers['idempotency-key'];
  return {
    service: { database: deps.database, accountId: request.principal.account.id, settings: deps.settings },
    idempotencyKey: typeof key === 'string' ? key : undefined,
  };
}
