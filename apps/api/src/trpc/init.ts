import type { OperationId, Permission } from '@convo/core';
import { TRPCError, initTRPC } from '@trpc/server';
import type { DatabaseHandle } from '../db/database.js';
import { ApiError, toErrorBody } from '../errors.js';
import type { Settings } from '../settings.js';
import { type Principal, accountsService } from '../services/accounts.js';
import type { ServiceContext } from '../services/context.js';

/** What every request brings to the procedures, whichever transport it came by. */
export interface RequestContext {
  database: DatabaseHandle;
  settings: Settings;
  requestId: string;
  /** The raw `Authorization` header. */
  authorization: string | undefined;
}

export interface AuthedContext extends RequestContext {
  principal: Principal;
  /** What service verbs run with. */
  service: ServiceContext;
}

export interface OperationMeta {
  operationId: OperationId;
  permission: Permission;
}

/** The ApiError behind anything a procedure throws; unknown errors stay unknown. */
export function apiErrorOf(error: unknown): ApiError | undefined {
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

const authenticated = t.middleware(async ({ ctx, next }) => {
  const principal = await accountsService.authenticate(ctx.database, ctx.authorization);
  return next({ ctx: { principal, service: { database: ctx.database, accountId: principal.account.id, settings: ctx.settings } } });
});

const PERMISSIONS: Record<Principal['key']['type'], readonly Permission[]> = {
  full_access: ['read', 'write'],
  read_only: ['read'],
  // A webhook key signs deliveries; it opens no API operation.
  webhook: [],
};

const authorized = t.middleware(async ({ ctx, meta, next }) => {
  const { principal } = ctx as unknown as AuthedContext;
  const permission = meta?.permission ?? 'write';
  if (!PERMISSIONS[principal.key.type].includes(permission)) {
    const message =
      principal.key.type === 'webhook'
        ? 'Webhook keys only sign webhook deliveries; use a full-access or read-only key for the API'
        : `This ${principal.key.type.replace('_', '-')} key cannot ${permission}`;
    throw ApiError.forbidden(message);
  }
  return next();
});

/**
 * Every operation: authentication (401) → permission (403) → input validation (400, the
 * parser added by each procedure) → the handler (404 and the rest).
 */
export const operationProcedure = t.procedure.use(authenticated).use(authorized);

/** Authentication alone, for requests to paths the contract does not have. */
export const authenticate = (ctx: RequestContext) => accountsService.authenticate(ctx.database, ctx.authorization);
