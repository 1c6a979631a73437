import { initTRPC } from '@trpc/server';
import type { FastifyReply } from 'fastify';
import type * as z from 'zod';
import type { DatabaseHandle } from '../db/database.js';
import { ApiError } from '../errors.js';
import type { ServiceContext } from '../services/context.js';
import type { EventFeed } from '../services/event-stream.js';
import { type ActiveSession, MANAGER_ROLES } from '../services/people.js';
import type { Settings } from '../settings.js';
import { apiErrorOf } from '../trpc/init.js';
import { trpcErrorShape } from '../trpc/error-shape.js';
import { validatePart } from '../validation.js';
import type { SignInGuard } from './sign-in-guard.js';

/** What a console procedure gets: the session of the request's cookie (never an API key). */
export interface ConsoleContext {
  database: DatabaseHandle;
  settings: Settings;
  session: ActiveSession | undefined;
  requestId: string;
  /** The client's address, for the sign-in guard. */
  address: string;
  reply: FastifyReply;
  signInGuard: SignInGuard;
  /** The server's event streams, which the Events page follows. */
  feed: EventFeed;
  /** Sets the session cookie to a new token, or clears it (null). */
  setSessionCookie(token: string | null): void;
  /** The session token this request carries (or the one just set). */
  cookieToken(): string | undefined;
}

export const c = initTRPC.context<ConsoleContext>().create({
  errorFormatter: ({ error, path, ctx }) => trpcErrorShape(apiErrorOf(error, path, ctx?.requestId), path),
});

/** Validates a console input as the API does, so a failure names `details.field` and `details.constraint`. */
export function consoleInput<S extends z.ZodType>(schema: S) {
  const parse = (raw: unknown): z.output<S> => {
    const result = validatePart(schema, raw ?? {});
    if ('error' in result) throw result.error;
    return result.value;
  };
  return { parse, _input: undefined as unknown as z.input<S>, _output: undefined as unknown as z.output<S> };
}

export const publicProcedure = c.procedure;

/** Any member of the session's account, with the service context of that account. */
export const memberProcedure = c.procedure.use(({ ctx, next }) => {
  const session = ctx.session;
  if (!session) throw ApiError.unauthorized('Sign in to the console first');
  const service: ServiceContext = { database: ctx.database, accountId: session.account.id, settings: ctx.settings };
  return next({ ctx: { session, service, idempotencyKey: undefined } });
});

/** Owners and admins: they manage keys, webhook endpoints, channels and members. */
export const managerProcedure = memberProcedure.use(({ ctx, next }) => {
  if (!MANAGER_ROLES.includes(ctx.session.role))
    throw ApiError.forbidden(`A ${ctx.session.role} cannot change this; ask an owner or admin of the account`);
  return next();
});
