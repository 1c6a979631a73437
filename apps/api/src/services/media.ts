import { MAX_FILE_BYTES, type Message, type MessageMedia, type PlatformMedia } from '@convo/core';
import { openMedia } from '../channels/graph-media.js';
import { type GraphError, networkFailure } from '../channels/graph-api.js';
import { ApiError } from '../errors.js';
import { now } from '../ids.js';
import { channelsRepository } from '../repositories/channels.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { type MediaJob, enqueueAll } from '../repositories/jobs.js';
import { type MessageRow, messagesRepository } from '../repositories/messages.js';
import type { TenantScope } from '../repositories/tenant.js';
import { openChannelToken } from './channels.js';
import { nextTryAt } from './retry-schedule.js';
import { type ServiceContext, scopeOf, transaction } from './context.js';
import { mediaOf, toMessage } from './conversations.js';
import { emitEvent } from './events.js';
import { type StoredUpload, filesService } from './files.js';

/**
 * Inbound media kept as files (CONTRACT: Files and media): a message with media is stored `pending`
 * with a download job queued in its transaction, so `message.received` never waits for the bytes; the
 * worker's job fetches them from the platform, keeps them as a file and emits `message.updated`.
 */

/** A platform's media as a new message stores it, before its download. */
export const pendingMedia = (media: PlatformMedia): MessageMedia => ({
  ...media,
  file_id: null,
  status: 'pending',
  error: null,
});

/** Queues the download of each of these messages' media, in the transaction that stored them. */
export async function queueMediaDownloads(scope: TenantScope, messageIds: readonly string[]): Promise<void> {
  if (messageIds.length === 0) return;
  await enqueueAll(
    scope.db,
    messageIds.map((messageId) => ({
      kind: 'download_media' as const,
      accountId: scope.accountId,
      payload: { messageId },
    })),
  );
}

/** What a download job asks of the worker: nothing more, or another try later. */
export type MediaOutcome = undefined | { retryAt: string; payload: MediaJob };

export const mediaService = {
  /**
   * Downloads a message's media and keeps it. A failure that may pass (the network, Meta's 5xx and
   * throttling) is tried again on `channelSendRetryScheduleMs`, then `failed` with its error; one that
   * cannot pass is `failed` at once; over 100 MiB is `too_large`. Media no longer `pending` is left alone.
   */
  async download(ctx: ServiceContext, job: MediaJob): Promise<MediaOutcome> {
    const scope = scopeOf(ctx);
    const row = await messagesRepository.findById(scope, job.messageId);
    const media = row ? mediaOf(row) : null;
    if (!row || !media || media.status !== 'pending') return undefined;
    const conversation = await conversationsRepository.findById(scope, row.conversation_id);
    const channel = conversation?.channel_id
      ? await channelsRepository.findById(scope, conversation.channel_id)
      : undefined;
    if (!channel)
      return settle(ctx, row, media, {
        status: 'failed',
        error: { code: 'channel_deleted', message: "The conversation's channel is gone: its media cannot be fetched" },
      });
    const token = openChannelToken(ctx.settings, channel);
    if (typeof token !== 'string') return settle(ctx, row, media, { status: 'failed', error: token });

    const opened = await openMedia(ctx.settings, channel.platform, token, media.id, MAX_FILE_BYTES);
    if (!opened.ok) return failedTry(ctx, row, media, job, opened);
    if (opened.bytes === null || (opened.size !== null && opened.size > MAX_FILE_BYTES)) {
      if (opened.bytes) await cancel(opened.bytes);
      return settle(ctx, row, media, { status: 'too_large', error: null });
    }
    const kept = await keepDownload(ctx, {
      filename: media.filename ?? null,
      // Messenger and Instagram name only the kind (`image/*`): the download says the type.
      mimeType: media.mime_type.includes('*') ? (opened.mimeType ?? 'application/octet-stream') : media.mime_type,
      bytes: opened.bytes,
      maxBytes: MAX_FILE_BYTES,
    });
    if (kept.ok) return settle(ctx, row, media, { status: 'stored', error: null }, kept.upload);
    if (kept.tooLarge) return settle(ctx, row, media, { status: 'too_large', error: null });
    return failedTry(ctx, row, media, job, kept.error);
  },
};

async function failedTry(
  ctx: ServiceContext,
  row: MessageRow,
  media: MessageMedia,
  job: MediaJob,
  error: GraphError,
): Promise<MediaOutcome> {
  const failedTries = job.tries ?? 0;
  const retryAt =
    error.kind === 'retryable' ? nextTryAt(ctx.settings.channelSendRetryScheduleMs, failedTries) : undefined;
  if (retryAt !== undefined) return { retryAt, payload: { ...job, tries: failedTries + 1 } };
  const reason: NonNullable<Message['error']> = { code: error.code, message: error.message };
  return settle(ctx, row, media, { status: 'failed', error: reason });
}

/**
 * Records how a download ended (with its file, once stored) and emits `message.updated`, together:
 * the message as it is now, or undefined when it was deleted meanwhile.
 */
export async function settleMedia(
  ctx: ServiceContext,
  row: MessageRow,
  media: MessageMedia,
  outcome: Pick<MessageMedia, 'status' | 'error'>,
  upload?: StoredUpload,
): Promise<Message | undefined> {
  try {
    return await transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      const file = upload ? await filesService.create(tx, upload) : undefined;
      const updated: MessageMedia = { ...media, ...outcome, file_id: file?.id ?? null };
      const changed = await messagesRepository.setMedia(scope, row.id, JSON.stringify(updated), now());
      // Deleted meanwhile (its contact was): nothing to tell.
      if (!changed) throw new MessageGone();
      const message: Message = toMessage(changed);
      await emitEvent(scope, 'message.updated', message, changed.conversation_id);
      return message;
    });
  } catch (error) {
    if (upload) await filesService.discard(ctx, upload);
    if (!(error instanceof MessageGone)) throw error;
    return undefined;
  }
}

/** Records how the download ended; the job has nothing more to do. */
async function settle(...args: Parameters<typeof settleMedia>): Promise<undefined> {
  await settleMedia(...args);
  return undefined;
}

class MessageGone extends Error {}

async function* buffers(chunks: AsyncIterable<Uint8Array>): AsyncIterable<Buffer> {
  for await (const chunk of chunks) yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/**
 * Keeps downloaded bytes as a file (inbound media, and an outbound link): the upload, or why not: over
 * `maxBytes`, or cut off mid-way (the bytes kept so far are gone, store removes them; another try may pass).
 */
export async function keepDownload(
  ctx: ServiceContext,
  input: { filename: string | null; mimeType: string; bytes: AsyncIterable<Uint8Array>; maxBytes: number },
): Promise<
  { ok: true; upload: StoredUpload } | { ok: false; tooLarge: true } | { ok: false; tooLarge: false; error: GraphError }
> {
  try {
    return { ok: true, upload: await filesService.store(ctx, { ...input, bytes: buffers(input.bytes) }) };
  } catch (error) {
    if (error instanceof ApiError && error.details?.constraint === 'max_bytes') return { ok: false, tooLarge: true };
    const message = `The download was cut off: ${(error as Error).message}`;
    return { ok: false, tooLarge: false, error: networkFailure('retryable', 'network_error', message) };
  }
}

/** Stops a download whose bytes are not wanted. */
export async function cancel(bytes: AsyncIterable<Uint8Array>): Promise<void> {
  await (bytes as unknown as ReadableStream).cancel?.().catch(() => undefined);
}
