import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { type GraphError, sendToPlatform } from '../channels/graph-api.js';
import type { DatabaseHandle } from '../db/database.js';
import { databaseRateLimiter } from '../db/rate-limiter-store.js';
import { type ChannelRow, channelsRepository, contactIdentitiesRepository } from '../repositories/channels.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { type MessageRow, messagesRepository } from '../repositories/messages.js';
import type { TenantScope } from '../repositories/tenant.js';
import { openSecret } from '../secret-box.js';
import type { SendJob } from '../repositories/jobs.js';
import { channelsService } from '../services/channels.js';
import { type ServiceContext, scopeOf, transaction } from '../services/context.js';
import { messagesService } from '../services/messages.js';
import type { Settings } from '../settings.js';
import type { JobContext, JobOutcome } from './worker.js';

/** Retry waits vary by ±10 % so that the sends of one outage do not all come back at once. */
const JITTER = 0.1;

interface SendDeps {
  database: DatabaseHandle;
  settings: Settings;
}

/** The job's payload as it comes back after failed tries: the tries so far ride along. */
type SendAttempt = SendJob & { tries?: number };

interface MessageError {
  code: string;
  message: string;
}

/** Everything one send needs, read before the send slot is taken. */
interface SendTarget {
  message: MessageRow;
  channel: ChannelRow;
  recipient: string;
}

/**
 * Sends one outbound message through its conversation's channel (CONTRACT: Message delivery).
 * A message that is no longer `queued` was handled already (a crash after recording `sent` must not
 * send it twice). Each send takes a slot of the channel's rate first; a refused slot reschedules the
 * job without counting a try. Accepted → `sent`; a refused token also puts the channel in `error`;
 * other Graph errors fail the message, except those that may pass later, which are retried on
 * `channelSendRetryScheduleMs` before the message fails with the last one.
 */
export async function sendMessage(deps: SendDeps, job: JobContext<'send_message'>): Promise<JobOutcome> {
  if (job.accountId === null) return;
  const ctx: ServiceContext = { ...deps, accountId: job.accountId };
  const scope = scopeOf(ctx);
  const payload = job.payload as SendAttempt;

  const target = await loadTarget(scope, payload.messageId);
  if (target === undefined) return;
  if ('code' in target) return fail(ctx, payload.messageId, target);

  const token = openToken(deps.settings, target.channel);
  if (typeof token !== 'string') return fail(ctx, payload.messageId, token);

  const waitMs = await takeSendSlot(deps, target.channel.id);
  if (waitMs !== undefined) return { retryAt: new Date(Date.now() + waitMs).toISOString() };

  const { message, channel, recipient } = target;
  const result = await sendToPlatform(deps.settings, channel, token, recipient, {
    type: message.type,
    content: message.content,
    template: payload.template,
  });
  if (result.ok) {
    await messagesService.advance(ctx, {
      messageId: message.id,
      status: 'sent',
      platformMessageId: result.platformMessageId,
    });
    return;
  }
  if (result.kind === 'invalid_token') return refuseToken(ctx, message.id, channel, result);
  if (result.kind === 'retryable') return retryLater(ctx, payload, result);
  return fail(ctx, message.id, errorOf(result));
}

/**
 * The message, its channel and the recipient's platform id; undefined when there is nothing to do,
 * or the error the message fails with when it cannot be sent at all.
 */
async function loadTarget(scope: TenantScope, messageId: string): Promise<SendTarget | MessageError | undefined> {
  const message = await messagesRepository.findById(scope, messageId);
  if (message?.status !== 'queued' || message.direction !== 'outbound') return undefined;
  const conversation = await conversationsRepository.findById(scope, message.conversation_id);
  if (!conversation?.channel_id) return undefined;
  const channel = await channelsRepository.findById(scope, conversation.channel_id);
  if (!channel)
    return { code: 'channel_deleted', message: "The conversation's channel was deleted before the message was sent" };
  if (channel.status === 'disabled')
    return { code: 'channel_disabled', message: "The conversation's channel was disabled before the message was sent" };
  const identity = await contactIdentitiesRepository.findForContact(scope, conversation.contact_id, channel.id);
  // A WhatsApp contact is reached at its number, without the "+", when it never wrote on the channel.
  const recipient =
    identity?.external_id ??
    (channel.platform === 'whatsapp' ? conversation.contact_phone?.replace(/^\+/, '') : undefined);
  if (!recipient) return { code: 'no_recipient', message: 'The contact has no address on this channel' };
  return { message, channel, recipient };
}

/** The channel's token in clear, or the error when this server's key cannot open it. */
function openToken(settings: Settings, channel: ChannelRow): string | MessageError {
  try {
    return openSecret(settings.secretKey(), channel.access_token_sealed);
  } catch {
    return {
      code: 'channel_token_unreadable',
      message:
        "The channel's access token cannot be opened with this server's secret key; set it again with PATCH /v1/channels/:id",
    };
  }
}

const errorOf = (error: GraphError): MessageError => ({ code: error.code, message: error.message });

async function fail(ctx: ServiceContext, messageId: string, error: MessageError): Promise<void> {
  await messagesService.advance(ctx, { messageId, status: 'failed', error });
}

/** Failed tries before this one; the payload comes from JSON, so anything else counts as none. */
const triesSoFar = (payload: SendAttempt): number =>
  typeof payload.tries === 'number' && Number.isInteger(payload.tries) && payload.tries > 0 ? payload.tries : 0;

/**
 * Another try after the next wait of the schedule (the tries so far carried in the payload), or,
 * past the schedule's end, the message fails with this last error.
 */
async function retryLater(ctx: ServiceContext, payload: SendAttempt, error: GraphError): Promise<JobOutcome> {
  const tries = triesSoFar(payload) + 1;
  const waitMs = ctx.settings.channelSendRetryScheduleMs[tries - 1];
  if (waitMs === undefined) return fail(ctx, payload.messageId, errorOf(error));
  const jittered = waitMs * (1 - JITTER + Math.random() * 2 * JITTER);
  return { retryAt: new Date(Date.now() + jittered).toISOString(), payload: { ...payload, tries } };
}

/** The token was refused: the message fails and the channel goes to `error`, in one transaction. */
async function refuseToken(ctx: ServiceContext, messageId: string, used: ChannelRow, error: GraphError): Promise<void> {
  await transaction(ctx, async (tx) => {
    await messagesService.advance(tx, { messageId, status: 'failed', error: errorOf(error) });
    await channelsService.refuseToken(tx, { channel: used, error });
  });
}

// The channel's send rate ---------------------------------------------------------------------------------------------

/** Limiters by database and rate: every worker of a process on one database shares them. */
const sendLimiters = new WeakMap<DatabaseHandle, Map<number, RateLimiterAbstract>>();

/**
 * The channel's send rate as rate-limiter-flexible counts it: one send per slot of 1/rate seconds.
 * A slot holds one send rather than a window of `rate` sends because two fixed windows side by side
 * let up to twice the rate through in the second that straddles them; with one send per slot, no
 * second ever holds more than the rate. Postgres keeps the slots in `rate_limits`, so that all
 * workers share them; SQLite (one process) keeps them in memory.
 */
export function sendRateLimiter(database: DatabaseHandle, sendsPerSecond: number): RateLimiterAbstract {
  let byRate = sendLimiters.get(database);
  if (!byRate) {
    byRate = new Map();
    sendLimiters.set(database, byRate);
  }
  const existing = byRate.get(sendsPerSecond);
  if (existing) return existing;

  // Whole milliseconds: the Postgres store keeps expiry times as bigint.
  const slotMs = Math.max(1, Math.ceil(1000 / sendsPerSecond));
  const options = { keyPrefix: `send${slotMs}ms`, points: 1, duration: slotMs / 1000 };
  const limiter = databaseRateLimiter(database, options);
  byRate.set(sendsPerSecond, limiter);
  return limiter;
}

/**
 * Takes the channel's next send slot: undefined when taken, else how long to wait. Jobs refused in
 * the same slot queue up behind one another (each refusal is counted in the slot), so that each
 * comes back when its turn may be free instead of all at the next slot.
 */
async function takeSendSlot(deps: SendDeps, channelId: string): Promise<number | undefined> {
  const limiter = sendRateLimiter(deps.database, deps.settings.channelSendsPerSecond);
  try {
    await limiter.consume(channelId);
    return undefined;
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    const slotMs = limiter.duration * 1000;
    const ahead = Math.max(0, rejection.consumedPoints - limiter.points - 1);
    return Math.max(1, rejection.msBeforeNext) + ahead * slotMs;
  }
}
