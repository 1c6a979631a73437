import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { DatabaseHandle } from '../db/database.js';
import { MAX_BODY_BYTES } from '../edge/request-body.js';
import { ApiError } from '../errors.js';
import { nextUlid, now } from '../ids.js';
import { type ChannelRow, channelPayloadsRepository, channelsRepository } from '../repositories/channels.js';
import { openSecret } from '../secret-box.js';
import type { Settings } from '../settings.js';
import { jobRow } from '../worker/queue.js';

/** Where Meta's webhooks come in, outside /v1 and without an API key: the channel's app secret signs them. */
export const META_HOOKS_PATH = '/hooks/meta/:channel_id';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** `sha256=` and the hex HMAC-SHA256 of the raw body under the app secret, compared in constant time. */
export function validMetaSignature(appSecret: string, rawBody: Buffer, header: unknown): boolean {
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false;
  const given = Buffer.from(header.slice('sha256='.length), 'hex');
  const expected = createHmac('sha256', appSecret).update(rawBody).digest();
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const sameText = (a: string, b: string) => {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
};

/**
 * The ingress of Meta's webhooks (CONTRACT: Channels). The body is read as raw bytes (this
 * plugin's own parser), its signature checked before anything is parsed or stored; a signed body
 * is stored with the job that processes it, in one transaction, and answered 200 at once.
 */
export const metaHooks: FastifyPluginAsync<{ database: DatabaseHandle; settings: Settings }> = async (app, deps) => {
  const { database, settings } = deps;

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) => done(null, body));

  const channelOf = async (id: string): Promise<ChannelRow> => {
    const channel = await channelsRepository.findByIdInAnyAccount(database.db, id);
    if (!channel) throw ApiError.notFound('channel', id);
    return channel;
  };

  app.get<{ Params: { channel_id: string }; Querystring: Record<string, string | string[] | undefined> }>(META_HOOKS_PATH, async (request, reply) => {
    const channel = await channelOf(request.params.channel_id);
    const { 'hub.mode': mode, 'hub.verify_token': token, 'hub.challenge': challenge } = request.query;
    if (mode !== 'subscribe' || typeof token !== 'string' || typeof challenge !== 'string' || !sameText(token, channel.verify_token)) {
      throw new ApiError('forbidden', "hub.mode must be subscribe and hub.verify_token the channel's verify_token");
    }
    return reply.type('text/plain; charset=utf-8').send(challenge);
  });

  app.post<{ Params: { channel_id: string } }>(META_HOOKS_PATH, async (request, reply) => {
    const channel = await channelOf(request.params.channel_id);
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const appSecret = openSecret(settings.secretKey(), channel.app_secret_sealed);
    if (!validMetaSignature(appSecret, raw, request.headers['x-hub-signature-256'])) {
      throw ApiError.unauthorized('Missing or invalid X-Hub-Signature-256');
    }
    let body: string;
    try {
      body = utf8.decode(raw);
      const parsed: unknown = JSON.parse(body);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    } catch {
      throw ApiError.badRequest('body', 'json', 'The body is not a JSON object');
    }
    // A disabled channel receives nothing; Meta is still answered 200 so that it does not retry.
    if (channel.status !== 'disabled') {
      const at = now();
      const payloadId = `pl_${nextUlid()}`;
      await channelPayloadsRepository.insertWithJob(
        database.db,
        { account_id: channel.account_id, id: payloadId, channel_id: channel.id, body, received_at: at, processed_at: null, errors: null },
        jobRow({ kind: 'process_channel_payload', accountId: channel.account_id, payload: { payloadId } }, at),
      );
    }
    return reply.type('text/plain; charset=utf-8').send('EVENT_RECEIVED');
  });
};
