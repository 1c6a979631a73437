import fastifyCookie from '@fastify/cookie';
import multipart from '@fastify/multipart';
import fastifyStatic from '@fastify/static';
import { type FastifyTRPCPluginOptions, fastifyTRPCPlugin } from '@trpc/server/adapters/fastify';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { DatabaseHandle } from '../db/database.js';
import { ApiError } from '../errors.js';
import { MAX_FILE_BYTES } from '@convo/core';
import { multipartOptions, readUpload, replyWithFile } from '../http/file-routes.js';
import { filesService } from '../services/files.js';
import { MANAGER_ROLES, SESSION_TTL_MS, peopleService } from '../services/people.js';
import type { Settings } from '../settings.js';
import type { EventFeed } from '../services/event-stream.js';
import type { ConsoleContext } from './init.js';
import { type ConsoleRouter, consoleRouter } from './router.js';
import { SignInGuard } from './sign-in-guard.js';

export const SESSION_COOKIE = 'convo_session';
/** The header every state-changing console call carries: a cross-site form or image cannot set it. */
export const CSRF_HEADER = 'x-convo-csrf';

/** The console's pages run only their own scripts and styles, talk only to this origin and are never framed. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export interface ConsoleOptions {
  database: DatabaseHandle;
  settings: Settings;
  /** The console's build; without one, its pages answer 404 and the calls still work. */
  staticDir: string | undefined;
  signInGuard?: SignInGuard;
  feed: EventFeed;
}

/**
 * The web console's pages and tRPC calls, authenticated by the session cookie, never by an API key. Register it
 * with the prefix /console, so its cookie parser, CSRF check and security headers apply to its routes only.
 */
export const consolePlugin: FastifyPluginAsync<ConsoleOptions> = async (app, options) => {
  const { database, settings } = options;
  const signInGuard = options.signInGuard ?? new SignInGuard();

  await app.register(fastifyCookie);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    reply.header('X-Content-Type-Options', 'nosniff');
    reply.header('Referrer-Policy', 'same-origin');
    reply.header('Cache-Control', 'no-store');
    if (request.method === 'POST') checkSameSite(request, settings.publicUrl);
  });

  const cookieOptions = { path: '/console', httpOnly: true, sameSite: 'lax', secure: settings.secureCookies } as const;

  await app.register(fastifyTRPCPlugin, {
    prefix: '/trpc',
    trpcOptions: {
      router: consoleRouter,
      allowBatching: false,
      createContext: async ({ req, res }): Promise<ConsoleContext> => {
        let token = req.cookies[SESSION_COOKIE];
        return {
          database,
          settings,
          session: await peopleService.resolve({ database }, token),
          requestId: req.id,
          address: req.ip,
          reply: res,
          signInGuard,
          feed: options.feed,
          setSessionCookie: (next) => {
            token = next ?? undefined;
            if (next === null) res.clearCookie(SESSION_COOKIE, cookieOptions);
            else res.setCookie(SESSION_COOKIE, next, { ...cookieOptions, maxAge: SESSION_TTL_MS / 1000 });
          },
          cookieToken: () => token,
        };
      },
      // An error's own headers (a refused sign-in's Retry-After) go out with it.
      responseMeta: ({ errors }) => ({
        headers: new Headers(
          errors.flatMap((error) => (error.cause instanceof ApiError ? Object.entries(error.cause.headers) : [])),
        ),
      }),
      onError: ({ error, req }) => {
        if (error.code === 'INTERNAL_SERVER_ERROR' && !(error.cause instanceof ApiError))
          req.log.error({ err: error.cause ?? error, requestId: req.id }, 'unexpected error');
      },
    } satisfies FastifyTRPCPluginOptions<ConsoleRouter>['trpcOptions'],
  });

  // A file's bytes for the signed-in account's pages (a message's image, a document to download): tRPC carries JSON.
  app.get<{ Params: { id: string } }>('/files/:id/content', async (request, reply) => {
    const session = await peopleService.resolve({ database }, request.cookies[SESSION_COOKIE]);
    if (!session) throw ApiError.unauthorized('Sign in to the console first');
    const ctx = { database, settings, accountId: session.account.id };
    return replyWithFile(request, reply, await filesService.content(ctx, request.params.id));
  });

  // A file for the reply box to send (`POST /v1/files` for the session's account), in a scope that reads multipart.
  await app.register(async (scope) => {
    await scope.register(multipart, multipartOptions(MAX_FILE_BYTES));
    scope.post('/files', async (request, reply) => {
      const session = await peopleService.resolve({ database }, request.cookies[SESSION_COOKIE]);
      if (!session) throw ApiError.unauthorized('Sign in to the console first');
      if (!MANAGER_ROLES.includes(session.role))
        throw ApiError.forbidden(`A ${session.role} cannot send files; ask an owner or admin of the account`);
      const ctx = { database, settings, accountId: session.account.id };
      const upload = await readUpload(request, ctx, 'file', MAX_FILE_BYTES);
      const file = await filesService.create(ctx, upload).catch(async (error: unknown) => {
        await filesService.discard(ctx, upload);
        throw error;
      });
      return reply.code(201).send(file);
    });
  });

  const index = options.staticDir && join(options.staticDir, 'index.html');
  if (options.staticDir && index && existsSync(index)) {
    // Hashed assets under /console/assets; every other page path is the single page's index.
    await app.register(fastifyStatic, {
      root: options.staticDir,
      prefix: '/',
      index: false,
      wildcard: false,
      serveDotFiles: false,
    });
    const page = (_request: FastifyRequest, reply: FastifyReply) =>
      reply.type('text/html; charset=utf-8').sendFile('index.html');
    app.get('/', page);
    app.get('/*', (request, reply) => {
      if (request.url.startsWith('/console/assets/') || request.url.startsWith('/console/trpc/'))
        throw new ApiError('not_found', 'Not found');
      return page(request, reply);
    });
  }
};

/**
 * CSRF guard: the Origin must be the configured public URL's, never one derived from the client-chosen Host, and
 * the call must carry CSRF_HEADER, which a cross-site request cannot without a preflight that CORS refuses.
 * The public URL is read on each call: a server on port 0 learns it only once it listens.
 */
function checkSameSite(request: FastifyRequest, publicUrl: string): void {
  if (request.headers.origin !== new URL(publicUrl).origin)
    throw ApiError.forbidden('Cross-site request refused: the console only accepts calls from its own pages');
  if (request.headers[CSRF_HEADER] !== '1')
    throw ApiError.forbidden(`Cross-site request refused: the ${CSRF_HEADER} header is missing`);
}
