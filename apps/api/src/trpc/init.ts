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
import { KeyCheck } from '../repositories/key-check.js';

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
  /**
   * Set by admitRequest when the key is checked inside the request's reads (KEY_CHECKED_BY_READS):
   * the check, and the rate-limit state whose headers wait for it (admitChecked).
   */
  keyCheck?: { check: KeyCheck; state: RateLimitState };
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
 * The read operations whose key, when this process has seen it before, is checked inside their
 * own reads rather than by a lookup first (repositories/key-check.ts): the hot reads, whose
 * statements are compiled once (repositories/prepared.ts) and run on a scope with the check.
 * Postgres only; every other operation looks its key up before anything else.
 */
const KEY_CHECKED_BY_READS: ReadonlySet<OperationId> = new Set<OperationId>(['conversations.list', 'conversations.retrieve', 'contacts.list']);

/**
 * Who is calling (401 otherwise), with the request counted against the account's per-minute limit
 * (429 past it) and the limit's state in headers. Failed attempts count against the client's
 * address, never an account; too many of them from one address are 429.
 *
 * For an operation of KEY_CHECKED_BY_READS whose key this process read before (on Postgres), the
 * principal it remembers is returned without a lookup and `ctx.keyCheck` is set: the operation's
 * reads check the key, and admitChecked must confirm it before any response (the middleware
 * below). The request has then taken its number of the account's minute before its key is
 * confirmed: a revoked key's first request in a process costs its account one request.
 */
export async function admitRequest(ctx: RequestContext, operationId?: OperationId): Promise<Principal> {
  let principal: Principal;
  let state: RateLimitState | undefined;
  let check: KeyCheck | undefined;
  try {
    const keyHash = accountsService.keyHashOf(ctx.authorization);
    const recalled = operationId !== undefined && KEY_CHECKED_BY_READS.has(operationId) ? accountsService.recalledPrincipal(ctx.database, keyHash) : undefined;
    if (ctx.rateLimits.countsWithAuthentication) {
      const nowMs = Date.now();
      const { blocks } = ctx.rateLimits;
      const knownAccount = blocks.accountOf(keyHash);
      if (knownAccount !== undefined && blocks.holds(knownAccount, nowMs)) {
        // The account has requests counted in advance: one of those, and a plain key lookup or
        // the remembered principal with the key checked by the reads.
        if (recalled?.account.id === knownAccount) {
          principal = recalled;
          check = new KeyCheck(principal.key.id, keyHash);
        } else {
          principal = await accountsService.authenticateHash(ctx.database, keyHash);
        }
        state = ctx.rateLimits.take(principal.account.id, principal.account.rateLimit, Date.now());
      } else {
        const points = blocks.sizeFor(knownAccount);
        const admitted = await accountsService.authenticateCounting(ctx.database, keyHash, nowMs, WINDOW_MS, points);
        principal = admitted.principal;
        blocks.noteKey(keyHash, principal.account.id);
        if (ctx.exchange) ctx.exchange.accountId = principal.account.id;
        state = ctx.rateLimits.admitCounted(principal.account.id, principal.account.rateLimit, admitted.counted, points, nowMs);
      }
    } else {
      principal = accountsService.knownPrincipal(ctx.database, keyHash) ?? recalled ?? (await accountsService.authenticateHash(ctx.database, keyHash));
      if (principal === recalled) check = new KeyCheck(principal.key.id, keyHash);
    }
  } catch (error) {
    throw await countedIfRefused(ctx, error);
  }
  if (check) {
    try {
      state ??= await ctx.rateLimits.consume(principal.account.id, principal.account.rateLimit);
    } catch (error) {
      // 401 comes before 429.
      await confirmKey(ctx, check);
      if (ctx.exchange) ctx.exchange.accountId = principal.account.id;
      throw error;
    }
    ctx.keyCheck = { check, state };
    return principal;
  }
  if (ctx.exchange) ctx.exchange.accountId = principal.account.id;
  state ??= await ctx.rateLimits.consume(principal.account.id, principal.account.rateLimit);
  if (ctx.exchange) setRateLimitHeaders(ctx.exchange, state);
  return principal;
}

/** `error`, after counting it against the client's address when it is a 401 (the brute-force guard; 429 once too many). */
async function countedIfRefused(ctx: RequestContext, error: unknown): Promise<unknown> {
  if (error instanceof ApiError && error.code === 'unauthorized') await ctx.rateLimits.authenticationFailed(ctx.ip);
  return error;
}

/** Looks the key up unless the request's reads confirmed it: 401 (a failed attempt of the client's address) when it is no longer active. */
async function confirmKey(ctx: RequestContext, check: KeyCheck): Promise<void> {
  if (check.confirmed) return;
  try {
    await accountsService.authenticateHash(ctx.database, check.keyHash);
  } catch (error) {
    throw await countedIfRefused(ctx, error);
  }
  check.confirmed = true;
}

/**
 * For a request admitted with a key check (admitRequest): confirms the key (a lookup unless its
 * reads did) and then sets what admission sets at once otherwise, the rate-limit headers and the
 * account of the request log. Throws 401 when the key is no longer active.
 */
async function admitChecked(ctx: RequestContext, pending: NonNullable<RequestContext['keyCheck']>, principal: Principal): Promise<void> {
  await confirmKey(ctx, pending.check);
  if (ctx.exchange) {
    ctx.exchange.accountId = principal.account.id;
    setRateLimitHeaders(ctx.exchange, pending.state);
  }
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
  const principal = await admitRequest(ctx, meta.operationId);
  const pending = ctx.keyCheck;
  if (!pending) return proceed(ctx, meta, principal, getRawInput, next);
  // The key is checked by the operation's reads: nothing leaves before it is confirmed, and a key
  // no longer active gets its 401 instead of whatever the operation answered.
  let result: Awaited<ReturnType<typeof next>>;
  try {
    result = await proceed(ctx, meta, principal, getRawInput, next);
  } catch (error) {
    await admitChecked(ctx, pending, principal);
    throw error;
  }
  await admitChecked(ctx, pending, principal);
  return result;
});

/** The checks after admission (permission, idempotency, input), then the operation itself. */
async function proceed<Next extends (options: { input: unknown }) => Promise<unknown>>(
  ctx: RequestContext,
  meta: OperationMeta,
  principal: Principal,
  getRawInput: () => Promise<unknown>,
  next: Next,
): Promise<Awaited<ReturnType<Next>>> {
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
  authed.service = { database: ctx.database, accountId: principal.account.id, settings: ctx.settings, keyCheck: ctx.keyCheck?.check };
  return (await next({ input })) as Awaited<ReturnType<Next>>;
}

/** Every operation: the checks above, then the handler (404 and the rest). */
export const operationProcedure = t.procedure.use(admitted);
