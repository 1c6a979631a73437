import {
  ById,
  ChangePasswordInput,
  CreateInvitationInput,
  CreateKeyInput,
  InvitationTokenInput,
  RemoveMemberInput,
  ResetPasswordInput,
  SignInInput,
  SignUpInput,
  SwitchAccountInput,
} from '@convo/core';
import type { OperationParsedInput, OperationResult } from '@convo/core';
import { tracked } from '@trpc/server';
import * as z from 'zod';
import { type KeyRecord, accountsService } from '../services/accounts.js';
import { type SessionView, peopleService } from '../services/people.js';
import { requestLogsService } from '../services/request-logs.js';
import { webhookEndpointsService } from '../services/webhooks.js';
import { type MutationId, type QueryId, call, operationInput } from '../trpc/init.js';
import { type ConsoleContext, c, consoleInput, managerProcedure, memberProcedure, publicProcedure } from './init.js';

/** The session as the console shows it, without its token's hash. */
const viewOf = (session: SessionView | undefined): SessionView | null =>
  session ? { user: session.user, account: session.account, role: session.role, accounts: session.accounts } : null;

/** After a call that set a new cookie: the session that cookie now opens. */
async function sessionOf(ctx: ConsoleContext, token: string): Promise<SessionView | null> {
  ctx.setSessionCookie(token);
  return viewOf(await peopleService.resolve(ctx, token));
}

/** A key as the console lists it: never its value. */
const keyView = (key: KeyRecord) => ({
  id: key.id,
  name: key.name,
  type: key.type,
  redacted: key.redacted,
  last_four: key.redacted.slice(-4),
  created_at: key.created_at,
  last_used_at: key.last_used_at,
  revoked_at: key.revoked_at,
  revoked_by: key.revoked_by,
});

/** The request log's filters: a status class, a path prefix, a key, a request id; pages of at most 100. */
const ListRequestLogsInput = z.strictObject({
  status_class: z.union([z.literal(2), z.literal(4), z.literal(5)]).optional(),
  path: z.string().min(1).max(2048).optional(),
  key_id: z.string().min(1).max(64).optional(),
  request_id: z.string().min(1).max(128).optional(),
  limit: z.int().min(1).max(100).default(20),
  offset: z.int().min(0).max(1_000_000).default(0),
});
const RequestIdInput = z.strictObject({ request_id: z.string().min(1).max(128) });
const EventIdInput = z.strictObject({ event_id: z.string().min(1).max(64) });
/** `lastEventId` is tRPC's: its subscription link sends the last tracked id when it reconnects. */
const LiveEventsInput = z.strictObject({ lastEventId: z.string().min(1).max(64).nullish() });

const publicUrlOf = (ctx: ConsoleContext, path: string) => `${ctx.settings.publicUrl.replace(/\/+$/, '')}${path}`;

/** An API operation (the endpoint table's) run for the session's account, read by any member. */
const readOperation = <K extends QueryId>(operationId: K) =>
  memberProcedure
    .input(operationInput(operationId))
    .query(({ ctx, input }): Promise<OperationResult<K>> => call(operationId, ctx, input as OperationParsedInput<K>));

/** An API operation that changes something, for owners and admins. */
const changeOperation = <K extends MutationId>(operationId: K) =>
  managerProcedure
    .input(operationInput(operationId))
    .mutation(
      ({ ctx, input }): Promise<OperationResult<K>> => call(operationId, ctx, input as OperationParsedInput<K>),
    );

/**
 * The console's calls (CONTRACT: Console and people), served at /console/trpc to the session of
 * the `convo_session` cookie only: an API key opens none of them. Webhook endpoints, channels and
 * the account's data are the API's own operations, run for the session's account.
 */
export const consoleRouter = c.router({
  session: {
    get: publicProcedure.query(({ ctx }) => viewOf(ctx.session)),
    signUp: publicProcedure.input(consoleInput(SignUpInput)).mutation(async ({ ctx, input }) => {
      const { token } = await peopleService.signUp(ctx, {
        email: input.email,
        password: input.password,
        name: input.name,
        accountName: input.account_name,
        invitation: input.invitation,
      });
      return sessionOf(ctx, token);
    }),
    signIn: publicProcedure.input(consoleInput(SignInInput)).mutation(async ({ ctx, input }) => {
      const email = input.email.trim().toLowerCase();
      await ctx.signInGuard.check(email, ctx.address);
      try {
        const { token } = await peopleService.signIn(ctx, input);
        await ctx.signInGuard.succeeded(email, ctx.address);
        return await sessionOf(ctx, token);
      } catch (error) {
        await ctx.signInGuard.failed(email, ctx.address);
        throw error;
      }
    }),
    signOut: publicProcedure.mutation(async ({ ctx }) => {
      if (ctx.session) await peopleService.signOut({ database: ctx.database, session: ctx.session });
      ctx.setSessionCookie(null);
      return null;
    }),
    changePassword: memberProcedure.input(consoleInput(ChangePasswordInput)).mutation(async ({ ctx, input }) => {
      const { token } = await peopleService.changePassword(ctx, {
        currentPassword: input.current_password,
        newPassword: input.new_password,
      });
      return sessionOf(ctx, token);
    }),
    resetPassword: publicProcedure.input(consoleInput(ResetPasswordInput)).mutation(async ({ ctx, input }) => {
      const { token } = await peopleService.resetPassword(ctx, {
        token: input.token,
        newPassword: input.new_password,
      });
      return sessionOf(ctx, token);
    }),
    switchAccount: memberProcedure.input(consoleInput(SwitchAccountInput)).mutation(async ({ ctx, input }) => {
      await peopleService.switchAccount(ctx, input.account_id);
      return viewOf(await peopleService.resolve(ctx, ctx.cookieToken()));
    }),
  },

  keys: {
    /** The account's keys, revoked ones included (when and by whom), newest first: never their values. */
    list: memberProcedure.query(async ({ ctx }) => (await accountsService.listKeys(ctx.service)).map(keyView)),
    /** The key's value is in this answer and nowhere else, ever. */
    create: managerProcedure.input(consoleInput(CreateKeyInput)).mutation(async ({ ctx, input }) => {
      const key = await accountsService.createKey(ctx, {
        accountId: ctx.session.account.id,
        type: input.type,
        name: input.name,
      });
      return { ...keyView(key), key: key.key };
    }),
    revoke: managerProcedure.input(consoleInput(ById)).mutation(async ({ ctx, input }) => {
      const key = await accountsService.revokeAccountKey(ctx.service, { id: input.id, by: ctx.session.user.email });
      return { id: key.id, revoked_at: key.revoked_at, revoked_by: key.revoked_by };
    }),
  },

  webhookEndpoints: {
    list: readOperation('webhookEndpoints.list'),
    retrieve: readOperation('webhookEndpoints.retrieve'),
    listDeliveries: readOperation('webhookEndpoints.listDeliveries'),
    create: changeOperation('webhookEndpoints.create'),
    update: changeOperation('webhookEndpoints.update'),
    delete: changeOperation('webhookEndpoints.delete'),
    retryDelivery: changeOperation('webhookEndpoints.retryDelivery'),
    test: changeOperation('webhookEndpoints.test'),
  },

  // The account's data, read by any member and answered by owners and admins, through the API's own operations.
  conversations: {
    list: readOperation('conversations.list'),
    retrieve: readOperation('conversations.retrieve'),
    listMessages: readOperation('conversations.listMessages'),
    update: changeOperation('conversations.update'),
  },

  messages: {
    send: changeOperation('messages.send'),
  },

  contacts: {
    list: readOperation('contacts.list'),
    retrieve: readOperation('contacts.retrieve'),
  },

  orders: {
    list: readOperation('orders.list'),
  },

  events: {
    list: readOperation('events.list'),
    /**
     * The account's new events as they happen (the API's event stream, over tRPC's SSE): each
     * tracked by its id, so the client resumes after the last it saw when it reconnects.
     */
    live: memberProcedure.input(consoleInput(LiveEventsInput)).subscription(async function* ({ ctx, input, signal }) {
      const follower = await ctx.feed.follow(ctx.service.accountId, { after: input.lastEventId ?? undefined });
      signal?.addEventListener('abort', () => follower.end());
      for await (const event of follower) yield tracked(event.id, event);
    }),
    /** The deliveries an event caused, with their attempts. */
    deliveries: memberProcedure
      .input(consoleInput(EventIdInput))
      .query(({ ctx, input }) => webhookEndpointsService.listEventDeliveries(ctx.service, input.event_id)),
  },

  workflows: {
    list: readOperation('workflows.list'),
    retrieve: readOperation('workflows.retrieve'),
    listRuns: readOperation('workflows.listRuns'),
  },

  channels: {
    list: readOperation('channels.list'),
    retrieve: readOperation('channels.retrieve'),
    create: changeOperation('channels.create'),
    update: changeOperation('channels.update'),
    delete: changeOperation('channels.delete'),
  },

  account: {
    get: memberProcedure.query(({ ctx }) => ctx.session.account),
  },

  /** The account's API requests of the last days (CONVO_REQUEST_LOG_DAYS), newest first; any member reads them. */
  requestLogs: {
    list: memberProcedure.input(consoleInput(ListRequestLogsInput)).query(({ ctx, input }) =>
      requestLogsService.list(ctx.service, {
        filter: {
          statusClass: input.status_class,
          path: input.path,
          keyId: input.key_id,
          requestId: input.request_id,
        },
        limit: input.limit,
        offset: input.offset,
      }),
    ),
    retrieve: memberProcedure
      .input(consoleInput(RequestIdInput))
      .query(({ ctx, input }) => requestLogsService.retrieve(ctx.service, input.request_id)),
  },

  members: {
    list: memberProcedure.query(async ({ ctx }) =>
      (await peopleService.listMembers(ctx.service)).map((m) => ({
        user_id: m.user_id,
        email: m.email,
        name: m.name,
        role: m.role,
        created_at: m.created_at,
      })),
    ),
    remove: managerProcedure.input(consoleInput(RemoveMemberInput)).mutation(async ({ ctx, input }) => {
      await peopleService.removeMember(ctx, input.user_id);
      return { user_id: input.user_id, removed: true };
    }),
  },

  invitations: {
    list: managerProcedure.query(async ({ ctx }) =>
      (await peopleService.listInvitations(ctx.service)).map((row) => ({
        id: row.id,
        role: row.role,
        created_at: row.created_at,
        expires_at: row.expires_at,
      })),
    ),
    /** The link carries the invitation's token: shown in this answer only. */
    create: managerProcedure.input(consoleInput(CreateInvitationInput)).mutation(async ({ ctx, input }) => {
      const { row, token } = await peopleService.createInvitation(ctx, input.role);
      return {
        id: row.id,
        role: row.role,
        created_at: row.created_at,
        expires_at: row.expires_at,
        url: publicUrlOf(ctx, `/console/invite/${token}`),
      };
    }),
    revoke: managerProcedure.input(consoleInput(ById)).mutation(async ({ ctx, input }) => {
      await peopleService.revokeInvitation(ctx.service, input.id);
      return { id: input.id, revoked: true };
    }),
    lookup: publicProcedure
      .input(consoleInput(InvitationTokenInput))
      .query(({ ctx, input }) => peopleService.lookupInvitation(ctx, input.token)),
    accept: memberProcedure.input(consoleInput(InvitationTokenInput)).mutation(async ({ ctx, input }) => {
      await peopleService.acceptInvitation(ctx, input.token);
      return viewOf(await peopleService.resolve(ctx, ctx.cookieToken()));
    }),
  },
});

export type ConsoleRouter = typeof consoleRouter;
