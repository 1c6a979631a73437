import { type EndpointDefinition, type EventType, type OperationId, sseFrameOf } from '@convo/core';
import type { FastifyInstance } from 'fastify';
import { PassThrough } from 'node:stream';
import { ApiError } from '../errors.js';
import type { EventFeed, EventFollower } from '../services/event-stream.js';
import { querySchemaOf } from '../validation.js';
import { admitted } from '../edge/admission.js';

/** The longest `Last-Event-ID` taken: an event id is far shorter. */
const MAX_LAST_EVENT_ID = 255;

/** `Last-Event-ID` wins over `starting_after` (an SSE client sends it when it reconnects to the same URL). */
function resumeFrom(header: string | string[] | undefined, startingAfter: string | undefined): string | undefined {
  if (header === undefined) return startingAfter;
  const value = Array.isArray(header) ? header.at(-1) : header;
  if (value === undefined || value === '') return startingAfter;
  if (value.length > MAX_LAST_EVENT_ID)
    throw ApiError.badRequest('Last-Event-ID', 'max_length', `Must be at most ${MAX_LAST_EVENT_ID} characters`);
  return value;
}

/**
 * `GET /v1/events/stream` (CONTRACT: Live events): Server-Sent Events of the account's events.
 * The answer starts at once (a comment), then carries each event as it is committed, with a
 * comment whenever nothing was sent for the keep-alive interval; it ends when the client goes or
 * the server closes (the feed ends every stream), and the client resumes with `Last-Event-ID`.
 */
export function registerStreamRoute(
  app: FastifyInstance,
  operationId: OperationId,
  operation: EndpointDefinition,
  feed: EventFeed,
) {
  app.route({
    method: operation.method,
    url: `/v1${operation.path}`,
    schema: { querystring: querySchemaOf(operation) },
    config: { operationId },
    handler: async (request, reply) => {
      const call = admitted(request);
      const query = request.query as { type?: EventType[]; starting_after?: string };
      const follower = await feed.follow(call.service.accountId, {
        after: resumeFrom(request.headers['last-event-id'], query.starting_after),
        types: query.type,
      });
      reply
        .code(200)
        .header('content-type', 'text/event-stream; charset=utf-8')
        .header('cache-control', 'no-cache')
        .header('x-accel-buffering', 'no')
        // The connection is the stream's: once it ends (the server closing), nothing waits on it.
        .header('connection', 'close');
      // HEAD asks for the headers alone: a stream that never ends would hold its connection.
      if (request.method === 'HEAD') {
        follower.end();
        return reply.send();
      }
      const body = new PassThrough();
      void pump(follower, body, call.service.settings.eventStreamKeepAliveMs);
      // The client went away (or the server cut the connection): the stream's room is free again.
      reply.raw.once('close', () => follower.end());
      return reply.send(body);
    },
  });
}

/** Writes the follower's events to the body as frames, with keep-alive comments between, until either ends. */
async function pump(follower: EventFollower, body: PassThrough, keepAliveMs: number): Promise<void> {
  // The id the stream starts after: a client that drops before the first event resumes from there.
  body.write(`${follower.startsAfter ? `id: ${follower.startsAfter}\n` : ''}: stream open\n\n`);
  const keepAlive = setInterval(() => body.write(': keep-alive\n\n'), keepAliveMs);
  keepAlive.unref();
  try {
    for await (const event of follower) {
      if (body.destroyed) break;
      // A client that reads slowly holds the events in its follower's queue, not here.
      if (!body.write(sseFrameOf(event)))
        await new Promise((resolve) => {
          body.once('drain', resolve);
          body.once('close', resolve);
        });
      keepAlive.refresh();
    }
  } finally {
    clearInterval(keepAlive);
    body.end();
  }
}
