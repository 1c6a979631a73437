import type { FastifyPluginAsync } from 'fastify';
import type { DatabaseHandle } from '../db/database.js';
import { MAX_BODY_BYTES } from '../edge/request-body.js';
import { channelInboundService } from '../services/channel-inbound.js';
import type { Settings } from '../settings.js';

/** Where Meta's webhooks come in, outside /v1 and without an API key: the channel's app secret signs them. */
export const META_HOOKS_PATH = '/hooks/meta/:channel_id';

/**
 * The ingress of Meta's webhooks (CONTRACT: Channels). The body is read as raw bytes (this
 * plugin's own parser), for the service to check its signature before anything is parsed; a
 * signed body is answered 200 once it is stored.
 */
export const metaHooks: FastifyPluginAsync<{ database: DatabaseHandle; settings: Settings }> = async (app, deps) => {
  const ctx = { database: deps.database, settings: deps.settings };

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) =>
    done(null, body),
  );

  app.get<{ Params: { channel_id: string }; Querystring: Record<string, string | string[] | undefined> }>(
    META_HOOKS_PATH,
    async (request, reply) => {
      const { 'hub.mode': mode, 'hub.verify_token': token, 'hub.challenge': challenge } = request.query;
      const channelId = request.params.channel_id;
      const answer = await channelInboundService.verify(ctx, { channelId, mode, token, challenge });
      return reply.type('text/plain; charset=utf-8').send(answer);
    },
  );

  app.post<{ Params: { channel_id: string } }>(META_HOOKS_PATH, async (request, reply) => {
    const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const signature = request.headers['x-hub-signature-256'];
    await channelInboundService.receive(ctx, { channelId: request.params.channel_id, rawBody, signature });
    return reply.type('text/plain; charset=utf-8').send('EVENT_RECEIVED');
  });
};
