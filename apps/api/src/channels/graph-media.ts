import type { Platform } from '@convo/core';
import type { Settings } from '../settings.js';
import {
  GRAPH_TIMEOUT_MS,
  type GraphError,
  classifyGraphError,
  networkFailure,
  parseJson,
  redact,
} from './graph-api.js';

// Fetches an inbound message's media from Meta, as each platform documents it.

/** A download has this long in all: a large video over a slow link, not a stalled one. */
export const MEDIA_DOWNLOAD_TIMEOUT_MS = 10 * 60_000;

/** The media's bytes, as they arrive, with what the platform says of their size and type. */
export interface MediaBytes {
  ok: true;
  /** Null when the platform's record says the media is over `maxBytes`: its bytes are not fetched. */
  bytes: AsyncIterable<Uint8Array> | null;
  /** From WhatsApp's media record or the answer's Content-Length; null when neither says. */
  size: number | null;
  mimeType: string | null;
}

export type MediaOutcome = MediaBytes | GraphError;

/**
 * Opens an inbound message's media. WhatsApp: `GET /{media-id}` with the channel's token gives a URL
 * (valid minutes), whose bytes are fetched with the same token. Messenger and Instagram: the webhook's
 * attachment URL, fetched as it is. Never throws: a network failure is a retryable error.
 * https://developers.facebook.com/documentation/business-messaging/whatsapp/business-phone-numbers/media
 */
export async function openMedia(
  settings: Pick<Settings, 'graphApiUrl' | 'graphApiVersion'>,
  platform: Platform,
  accessToken: string,
  mediaId: string,
  maxBytes: number,
): Promise<MediaOutcome> {
  if (platform !== 'whatsapp') return fetchBytes(mediaId, undefined, null);
  const base = settings.graphApiUrl.replace(/\/+$/, '');
  const record = await fetchJson(`${base}/${settings.graphApiVersion}/${encodeURIComponent(mediaId)}`, accessToken);
  if (!record.ok) return record;
  const { url, file_size: size } = record.json as { url?: unknown; file_size?: unknown };
  if (typeof url !== 'string')
    return {
      ...networkFailure('permanent', 'unexpected_response', "The Graph API's media record has no URL"),
      httpStatus: 200,
    };
  if (typeof size === 'number' && size > maxBytes) return { ok: true, bytes: null, size, mimeType: null };
  return fetchBytes(url, accessToken, typeof size === 'number' ? size : null);
}

/** A Graph API object read with the channel's token: its JSON, or the error Meta (or the network) gave. */
export async function fetchJson(url: string, accessToken: string): Promise<{ ok: true; json: unknown } | GraphError> {
  const answer = await request(url, accessToken, GRAPH_TIMEOUT_MS);
  if (!answer.ok) return answer;
  const json = parseJson(await answer.response.text().catch(() => ''));
  const error = (json as { error?: unknown } | undefined)?.error;
  if (!answer.response.ok || (error && typeof error === 'object'))
    return errorOf(answer.response.status, error, accessToken);
  return { ok: true, json };
}

async function fetchBytes(url: string, accessToken: string | undefined, size: number | null): Promise<MediaOutcome> {
  const answer = await request(url, accessToken, MEDIA_DOWNLOAD_TIMEOUT_MS);
  if (!answer.ok) return answer;
  const { response } = answer;
  if (!response.ok || !response.body) {
    const json = parseJson(await response.text().catch(() => ''));
    return errorOf(response.status, (json as { error?: unknown } | undefined)?.error, accessToken);
  }
  const length = Number(response.headers.get('content-length'));
  return {
    ok: true,
    bytes: response.body as unknown as AsyncIterable<Uint8Array>,
    size: size ?? (Number.isFinite(length) && response.headers.has('content-length') ? length : null),
    mimeType: response.headers.get('content-type'),
  };
}

async function request(
  url: string,
  accessToken: string | undefined,
  timeoutMs: number,
): Promise<{ ok: true; response: Response } | GraphError> {
  try {
    const response = await fetch(url, {
      headers: accessToken ? { authorization: `Bearer ${accessToken}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { ok: true, response };
  } catch (error) {
    const reason = (error as Error).name === 'TimeoutError' ? 'timeout' : 'network_error';
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return networkFailure(
      'retryable',
      reason,
      redactIf(`${(error as Error).message}${cause ? `: ${cause}` : ''}`, accessToken),
    );
  }
}

function errorOf(status: number, error: unknown, accessToken: string | undefined): GraphError {
  const classified =
    error && typeof error === 'object'
      ? classifyGraphError(status, error as Parameters<typeof classifyGraphError>[1])
      : {
          ...networkFailure(
            status >= 500 || status === 429 || status === 408 ? 'retryable' : 'permanent',
            `http_${status}`,
            `The media download answered HTTP ${status}`,
          ),
          httpStatus: status,
        };
  return { ...classified, message: redactIf(classified.message, accessToken) };
}

/** Messenger's and Instagram's attachment URLs are fetched without a token: nothing to redact then. */
const redactIf = (text: string, token: string | undefined) => (token ? redact(text, token) : text);
