import { createHmac, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../errors.js';
import { nextUlid, now } from '../ids.js';
import { type ChannelRow, channelPayloadsRepository, channelsRepository } from '../repositories/channels.js';
import { jobRow } from '../repositories/jobs.js';
import { openSecret } from '../secret-box.js';
import type { ServiceContext } from './context.js';

/** What Meta's webhooks run with: no account yet, the channel they name says whose they are. */
export type IngressContext = Omit<ServiceContext, 'accountId'>;

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

async function channelOf(ctx: IngressContext, id: string): Promise<ChannelRow> {
  const channel = await channelsRepository.findByIdInAnyAccount(ctx.database.db, id);
  if (!channel) throw ApiError.notFound('channel', id);
  return channel;
}

/** Meta's subscription handshake: `hub.mode`, `hub.verify_token` and `hub.challenge` as sent. */
interface MetaHandshake {
  channelId: string;
  mode: unknown;
  token: unknown;
  challenge: unknown;
}

/** Meta's webhooks to a channel (CONTRACT: Channels), whatever account the channel is in. */
export const metaWebhooksService = {
  /** Meta's subscription handshake: the challenge, when the verify token is the channel's. */
  async verify(ctx: IngressContext, input: MetaHandshake): Promise<string> {
    const channel = await channelOf(ctx, input.channelId);
    const { mode, token, challenge } = input;
    const tokenMatches = typeof token === 'string' && sameText(token, channel.verify_token);
    if (mode !== 'subscribe' || !tokenMatches || typeof challenge !== 'string') {
      throw new ApiError('forbidden', "hub.mode must be subscribe and hub.verify_token the channel's verify_token");
    }
    return challenge;
  },

  /**
   * A body Meta posted: its signature checked before anything is parsed or stored, then stored
   * with the job that processes it (worker/process-channel-payload.ts), in one transaction. A
   * disabled channel receives nothing, and Meta is still answered 200 so that it does not retry.
   */
  async receive(ctx: IngressContext, input: { channelId: string; rawBody: Buffer; signature: unknown }): Promise<void> {
    const channel = await channelOf(ctx, input.channelId);
    const appSecret = openSecret(ctx.settings.secretKey(), channel.app_secret_sealed);
    if (!validMetaSignature(appSecret, input.rawBody, input.signature)) {
      throw ApiError.unauthorized('Missing or invalid X-Hub-Signature-256');
    }
    let body: string;
    try {
      body = utf8.decode(input.rawBody);
      const parsed: unknown = JSON.parse(body);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    } catch {
      throw ApiError.badRequest('body', 'json', 'The body is not a JSON object');
    }
    if (channel.status === 'disabled') return;
    const at = now();
    const payloadId = `pl_${nextUlid()}`;
    const accountId = channel.account_id;
    const payload = { account_id: accountId, id: payloadId, channel_id: channel.id, body, received_at: at };
    const unprocessed = { processed_at: null, errors: null };
    const job = jobRow({ kind: 'process_channel_payload', accountId, payload: { payloadId } }, at);
    await channelPayloadsRepository.insertWithJob(
      ctx.database.db,
      ctx.database.capabilities,
      { ...payload, ...unprocessed },
      job,
    );
  },
};
