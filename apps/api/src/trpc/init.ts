import type { HttpMethod, OperationId, Permission } from '@convo/core';
import { TRPCError, initTRPC } from '@trpc/server';
import type { DatabaseHandle } from '../db/database.js';
import type { RateLimits } from '../edge/rate-limits.js';
import { type RateLimitState, WINDOW_MS, setRateLimitHeaders } from '../edge/rate-limits.js';
import { IdempotentReplay, idempotency } from '../edge/idempotency.js';
import { ApiError, toErrorBody } from '../errors.js';
import type { Settings } from '../settings.js';
import { type Principal, accountsService } from '../services/accounts.js';
export { IdempotentReplay };
import type { ServiceContext } from '../services/context.js';

/** What every request brings to the procedures, whichever transport it came by. */
export interface RequestContext {
  database: DatabaseHandle;
  settings: Settings;
  rateLimits: RateLimits;
  requestId: string;
  /** The raw `Authorization` header. */
  authorization: string | undefined;
  /** The client's address (brute-force guard). */
  ip: string;
  /** The REST request being served, when there is one (not for /trpc calls). */
  exchange?: HttpExchange;
}

/** What the procedures may tell the REST transport about the response. */
export interface HttpExchange {
  setHeader(name: string, value: string): void;
  /** The `Idempotency-Key` header as sent. */
  idempotencyKey: string | undefined;
  /** SHA-256 of the operation, path parameters, query and body bytes. */
  requestHash: string;
  /** Set when the response must be stored for an idempotency key; called with what is sent. */
  onResponse?: ((status: number, body: string) => Promise<void>) | undefined;
  /** The caller's account, once known (for the request log). */
  accountId?: string;
}

export interface AuthedContext extends RequestContext {
  principal: Principal;
  /** What service verbs run with. */
  service: ServiceContext;
}

export interface OperationMeta {
  operationId: OperationId;
  permission: Permission;
  method: HttpMethod;
  /** The operation's input parser (contractInput): throws ApiError naming every problem. */
  parseInput: (raw: unknown) => unknown;
}

/** The ApiError behind anything a procedure throws; unknown errors stay unknown. */
export function apiErrorOf(error: unknown): ApiError | undefined {
  if (error instanceof TRPCError && error.cause instanceof IdempotentReplay) return undefined;
  if (error instanceof ApiError) return error;
  if (error instanceof TRPCError && error.cause instanceof ApiError) return error.cause;
  return undefined;
}

export const t = initTRPC
  .context<RequestContext>()
  .meta<OperationMeta>()
  .create({
    // /trpc callers get the same error body as REST callers, under `data.body`.
    errorFormatter: ({ shape, error, ctx }) => {
      const apiError = apiErrorOf(error) ?? (error.code === 'NOT_FOUND' ? ApiError.notFound('procedure') : ApiError.serverError(ctx?.requestId ?? 'unknown'));
      return { ...shape, message: apiError.message, data: { ...shape.data, stack: undefined, httpStatus: apiError.status, body: toErrorBody(apiError) } };
    },
  });

/**
 * Who is calling (401 otherwise), with the request counted against the account's per-minute limit
 * (429 past it) and the limit's state in headers. Failed attempts count against the client's
 * address, never an account; too many of them from one address are 429.
 */
export async function admitRequest(ctx: RequestContext): Promise<Principal> {
  let principal: Principal;
  let state: RateLimitState | undefined;
  try {
    if (ctx.rateLimits.countsWithAuthentication) {
      const nowMs = Date.now();
      const keyHash = accountsService.keyHashOf(ctx.authorization);
      const { blocks } = ctx.rateLimits;
      const knownAccount = blocks.accountOf(keyHash);
      if (knownAccount !== undefined && blocks.holds(knownAccount, nowMs)) {
        // The account has requests counted in advance: a plain key lookup, and one of those.
        principal = await accountsService.authenticateHash(ctx.database, keyHash);
        state = blocks.take(principal.account.id, principal.account.rateLimit, Date.now());
      } else {
        const points = blocks.sizeFor(knownAccount);
        const admitted = await accountsService.authenticateCounting(ctx.database, keyHash, nowMs, WINDOW_MS, points);
        principal = admitted.principal;
        blocks.noteKey(keyHash, principal.account.id);
        if (ctx.exchange) ctx.exchange.accountId = principal.account.id;
        state = ctx.rateLimits.admitCounted(principal.account.id, principal.account.rateLimit, admitted.counted, points, nowMs);
      }
    } else {
      const keyHash = accountsService.keyHashOf(ctx.authorization);
      principal = accountsService.knownPrincipal(ctx.database, keyHash) ?? (await accountsService.authenticateHash(ctx.database, keyHash));
    }
  } catch (error) {
    if (error instanceof ApiError && error.code === 'unauthorized') await ctx.rateLimits.authenticationFailed(ctx.ip);
    throw error;
  }
  if (ctx.exchange) ctx.exchange.accountId = principal.account.id;
  state ??= await ctx.rateLimits.consume(principal.account.id, principal.account.rateLimit);
  if (ctx.exchange) setRateLimitHeaders(ctx.exchange, state);
  return principal;
}

const PERMISSIONS: Record<Principal['key']['type'], readonly Permission[]> = {
  full_access: ['read', 'write'],
  read_only: ['read'],
  // A webhook key signs deliveries; it opens no API operation.
  webhook: [],
};

/** 403 unless the key may do what the operation needs. */
function authorize(principal: Principal, permission: Permission): void {
  if (PERMISSIONS[principal.key.type].includes(permission)) return;
  const message =
    principal.key.type === 'webhook'
      ? 'Webhook keys only sign webhook deliveries; use a full-access or read-only key for the API'
      : `This ${principal.key.type.replace('_', '-')} key cannot ${permission}`;
  throw ApiError.forbidden(message);
}

const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/**
 * A POST with an Idempotency-Key runs once per key and body: a repeat gets the stored response
 * (IdempotentReplay), a repeat with another body is 400, a repeat during the first waits for it.
 */
async function claimIdempotencyKey(ctx: RequestContext, accountId: string, exchange: HttpExchange): Promise<void> {
  const key = exchange.idempotencyKey;
  if (key === undefined) return;
  if (key.length === 0) throw ApiError.badRequest(IDEMPOTENCY_HEADER, 'min_length', 'Idempotency-Key must not be empty');
  if (key.length > 255) throw ApiError.badRequest(IDEMPOTENCY_HEADER, 'max_length', 'Idempotency-Key must have at most 255 characters');
  const start = await idempotency.start(ctx.database, accountId, key, exchange.requestHash);
  switch (start.kind) {
    case 'replay':
      throw new IdempotentReplay(start.status, start.body);
    case 'mismatch':
      throw ApiError.badRequest(IDEMPOTENCY_HEADER, 'idempotency_key', 'This Idempotency-Key was used with a different request in the last 24 hours');
    case 'busy':
      throw ApiError.badRequest(IDEMPOTENCY_HEADER, 'idempotency_key', 'A request with this Idempotency-Key is still running; retry later');
    case 'new':
      exchange.onResponse = (status, body) => idempotency.finish(ctx.database, accountId, key, status, body);
  }
}

/**
 * The checks every operation passes, in this order: authentication (401) → rate limit (429) →
 * permission (403) → idempotency → input validation (400). One middleware rather than a layer
 * each (and no `.input()` parser layer): tRPC copies the call's options and context at every
 * layer, which showed in the profile of fast requests. The router's input and output types come
 * from the contract (AppRouter), not from a parser.
 */
const admitted = t.middleware(async ({ ctx, meta, getRawInput, next }) => {
  if (!meta) throw new Error('Every operation procedure has its meta');
  const principal = await admitRequest(ctx);
  authorize(principal, meta.permission);
  if (meta.method === 'POST' && ctx.exchange?.idempotencyKey !== undefined) await claimIdempotencyKey(ctx, principal.account.id, ctx.exchange);
  let input: unknown;
  try {
    input = meta.parseInput(await getRawInput());
  } catch (cause) {
    throw new TRPCError({ code: 'BAD_REQUEST', cause });
  }
  // The request's own context is completed in place rather than passed to next({ ctx }), which
  // copies every key of both objects into a new one (a tenth of a read by id's CPU time went to
  // tRPC's copies). Each call gets its own context object (contextOf, createContext).
  const authed = ctx as AuthedContext;
  authed.principal = principal;
  authed.service = { database: ctx.database, accountId: principal.account.id, settings: ctx.settings };
  return next({ input });
});

/** Every operation: the checks above, then the handler (404 and the rest). */
export const operationProcedure = t.procedure.use(admitted);
