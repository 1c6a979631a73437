import {
  MEDIA_RULES,
  type MediaMessageType,
  type MessageMedia,
  type OutboundMedia,
  type Platform,
  mediaProblem,
} from '@convo/core';
import {
  type GraphError,
  type GraphSendResult,
  networkFailure,
  sendAttachment,
  sendToPlatform,
  uploadWhatsAppMedia,
} from '../channels/graph-api.js';
import { openLink } from '../channels/media-link.js';
import { ApiError } from '../errors.js';
import type { ChannelRow } from '../repositories/channels.js';
import { filesRepository } from '../repositories/files.js';
import type { MessageRow } from '../repositories/messages.js';
import { webhookUrlProblem } from '../webhook-addresses.js';
import { type ServiceContext, scopeOf } from './context.js';
import { filesService } from './files.js';
import { keepDownload, settleMedia } from './media.js';

/**
 * Outbound media (CONTRACT: Files and media): a message names a file kept by Convo or a link. Each
 * platform's type and size rules are checked before the message is accepted (a link's by its
 * extension, and again once fetched); the worker keeps a link's bytes as a file, then sends the file
 * the platform's own way (WhatsApp: upload, then send by id; Messenger and Instagram: an attachment).
 */

/** Media types by file extension, for links whose address says what they hold. */
const EXTENSION_TYPES: Record<string, string> = {
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  png: 'image/png',
  gif: 'image/gif',
  webp: 'image/webp',
  mp4: 'video/mp4',
  '3gp': 'video/3gpp',
  mov: 'video/quicktime',
  webm: 'video/webm',
  avi: 'video/x-msvideo',
  aac: 'audio/aac',
  m4a: 'audio/mp4',
  mp3: 'audio/mpeg',
  amr: 'audio/amr',
  ogg: 'audio/ogg',
  opus: 'audio/ogg',
  wav: 'audio/wav',
  pdf: 'application/pdf',
};

const PLATFORM_NAMES: Record<Platform, string> = {
  whatsapp: 'WhatsApp',
  facebook: 'Messenger',
  instagram: 'Instagram',
};

/** The last segment of a link's path, as its file's name. */
const linkFilename = (url: URL): string | undefined => {
  const last = url.pathname.split('/').pop();
  return last ? decodeURIComponent(last) : undefined;
};

/** What a link holds, by its extension: an mp4 or ogg is audio or video as the message says. */
export function linkMimeType(url: URL, type: MediaMessageType): string | undefined {
  const extension = url.pathname.split('.').pop()?.toLowerCase() ?? '';
  const known = EXTENSION_TYPES[extension];
  if (type === 'audio' && extension === 'mp4') return 'audio/mp4';
  if (type === 'video' && extension === 'ogg') return 'video/ogg';
  return known;
}

/** The media a new outbound message records, once the platform's rules pass (else a 400 or the file's 404). */
export async function outboundMediaOf(
  ctx: ServiceContext,
  input: { platform: Platform; type: MediaMessageType; media: OutboundMedia; caption: string },
): Promise<MessageMedia> {
  const { platform, type, media } = input;
  if (platform !== 'whatsapp' && input.caption.length > 0)
    throw ApiError.badRequest(
      'content',
      'unknown',
      `${PLATFORM_NAMES[platform]} attachments carry no caption: send the text as a message of its own`,
    );
  if (media.file_id !== undefined) {
    const file = await filesRepository.findById(scopeOf(ctx), media.file_id);
    if (!file) throw ApiError.notFound('file', media.file_id);
    const problem = mediaProblem(platform, type, { mime_type: file.mime_type, size: Number(file.size) });
    if (problem) throw ApiError.badRequest('media.file_id', problem.constraint, problem.message);
    return {
      id: file.id,
      mime_type: file.mime_type,
      file_id: file.id,
      status: 'stored',
      error: null,
      ...(file.filename ? { filename: file.filename } : {}),
    };
  }
  const link = media.url as string;
  const refused = await webhookUrlProblem(link, { allowPrivate: ctx.settings.allowPrivateWebhooks });
  if (refused) throw ApiError.badRequest('media.url', 'format', refused);
  const url = new URL(link);
  const guessed = linkMimeType(url, type);
  const problem = guessed ? mediaProblem(platform, type, { mime_type: guessed, size: null }) : undefined;
  if (problem) throw ApiError.badRequest('media.url', problem.constraint, problem.message);
  const filename = linkFilename(url);
  return {
    id: link,
    mime_type: guessed ?? (type === 'document' ? 'application/octet-stream' : `${type}/*`),
    file_id: null,
    status: 'pending',
    error: null,
    ...(filename ? { filename } : {}),
  };
}

/** One media message on its way out, with what the send job read for it. */
export interface MediaSend {
  message: MessageRow;
  media: MessageMedia;
  channel: ChannelRow;
  recipient: string;
  token: string;
  /** No try follows this one: a link that cannot be fetched now has failed for good. */
  finalTry: boolean;
}

const permanent = (code: string, message: string): GraphError => networkFailure('permanent', code, message);

/** Sends a media message: a link is fetched and kept as a file first, then the file goes out. */
export async function sendMedia(ctx: ServiceContext, send: MediaSend): Promise<GraphSendResult> {
  const type = send.message.type as MediaMessageType;
  let fileId = send.media.file_id;
  if (fileId === null) {
    const kept = await keepLink(ctx, send, type);
    if (!kept.ok) return kept;
    fileId = kept.fileId;
  }
  const { file, bytes } = await filesService.content(ctx, fileId);
  const problem = mediaProblem(send.channel.platform, type, file);
  if (problem) return permanent('unsupported_media', problem.message);
  const outbound = { filename: file.filename, mimeType: file.mime_type, size: file.size, bytes: bytes() };
  const { channel, token, recipient } = send;
  if (channel.platform !== 'whatsapp') return sendAttachment(ctx.settings, channel, token, recipient, type, outbound);
  const uploaded = await uploadWhatsAppMedia(ctx.settings, channel, token, outbound);
  if (!uploaded.ok) return uploaded;
  const message = { type, content: send.message.content, mediaId: uploaded.id, filename: file.filename };
  return sendToPlatform(ctx.settings, channel, token, recipient, message);
}

/**
 * Fetches a link and keeps it as the message's file (`message.updated` says so). Over the platform's
 * size or of a type it does not take, it is not kept: the media is `too_large` or `failed`.
 */
async function keepLink(
  ctx: ServiceContext,
  send: MediaSend,
  type: MediaMessageType,
): Promise<{ ok: true; fileId: string } | GraphError> {
  const { message, media, channel } = send;
  const rule = MEDIA_RULES[channel.platform][type];
  const giveUp = async (error: GraphError, status: 'failed' | 'too_large' = 'failed') => {
    if (error.kind !== 'retryable' || send.finalTry)
      await settleMedia(ctx, message, media, {
        status,
        error: status === 'failed' ? { code: error.code, message: error.message } : null,
      });
    return error;
  };
  const opened = await openLink(media.id, { allowPrivate: ctx.settings.allowPrivateWebhooks });
  if (!opened.ok) return giveUp(opened);
  const stream = opened.bytes as AsyncIterable<Uint8Array> & { destroy?: () => void };
  const mimeType = opened.mimeType ?? (media.mime_type.includes('*') ? 'application/octet-stream' : media.mime_type);
  const tooLarge = permanent(
    'media_too_large',
    `The media is larger than ${channel.platform} takes (${rule.maxBytes} bytes)`,
  );
  const refused =
    opened.size !== null && opened.size > rule.maxBytes
      ? { error: tooLarge, status: 'too_large' as const }
      : mediaProblem(channel.platform, type, { mime_type: mimeType, size: null })
        ? {
            error: permanent('unsupported_media', `${channel.platform} does not send ${type} as ${mimeType}`),
            status: 'failed' as const,
          }
        : undefined;
  if (refused) {
    stream.destroy?.();
    return giveUp(refused.error, refused.status);
  }
  const kept = await keepDownload(ctx, {
    filename: media.filename ?? null,
    mimeType,
    bytes: stream,
    maxBytes: rule.maxBytes,
  });
  if (!kept.ok) return kept.tooLarge ? giveUp(tooLarge, 'too_large') : giveUp(kept.error);
  const updated = await settleMedia(ctx, message, media, { status: 'stored', error: null }, kept.upload);
  const fileId = updated?.media?.file_id;
  if (!fileId) return permanent('message_deleted', 'The message was deleted while its media was fetched');
  return { ok: true, fileId };
}
