import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import type { MessageTemplate, Platform } from '@convo/core';
import type { Settings } from '../settings.js';

// Sends a message through Meta's Graph API and classifies the answer for the sender.

/** A send that has no complete answer by then is a failed try (and tried again). */
export const GRAPH_TIMEOUT_MS = 15_000;

/** Send answers are a few hundred bytes; anything past this is not one. */
const MAX_RESPONSE_BYTES = 256 * 1024;

/** The most of Meta's error text kept on a message or a channel. */
const MAX_ERROR_MESSAGE_LENGTH = 500;

/** Idle connections close after this; a busy channel's connections are reused. */
const IDLE_CONNECTION_MS = 4_000;

/** One pool per protocol for the whole process, so sends to Meta reuse their TLS connections. */
const agents = {
  http: new http.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
  https: new https.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
};

export interface GraphChannel {
  platform: Platform;
  /** The WhatsApp phone number id, the Page id or the Instagram account id. */
  external_id: string;
}

export interface OutboundMessage {
  type: string;
  content: string;
  template?: MessageTemplate | undefined;
  /** A media message's file as WhatsApp's media upload named it. */
  mediaId?: string;
  filename?: string | null;
}

/** A file's bytes as a request streams them. */
export interface OutboundFile {
  filename: string | null;
  mimeType: string;
  size: number;
  bytes: AsyncIterable<Buffer>;
}

/** An upload has this long in all: 100 MiB over a slow link, not a stalled one. */
const UPLOAD_TIMEOUT_MS = 10 * 60_000;

/** The attachment type Messenger and Instagram call each media type. */
const ATTACHMENT_TYPES: Record<string, string> = { image: 'image', video: 'video', audio: 'audio', document: 'file' };

export interface GraphAccepted {
  ok: true;
  platformMessageId: string;
}

/**
 * `retryable`: the same send may pass later (network, timeout, 5xx, throttling, Meta's temporary
 * errors); `invalid_token`: the channel's token is refused, so no send on the channel can pass;
 * `permanent`: this message will not pass as it is.
 */
export type GraphErrorKind = 'retryable' | 'invalid_token' | 'permanent';

export interface GraphError {
  ok: false;
  kind: GraphErrorKind;
  /** The Graph error's code, or `network_error`, `timeout`, `http_<status>`, `unexpected_response`. */
  code: string;
  message: string;
  /** Null when no answer arrived. */
  httpStatus: number | null;
}

export type GraphSendResult = GraphAccepted | GraphError;

/**
 * Error codes that name a refused token: 190 (access token expired or invalid) and 102 (API session)
 * in the Graph API's error handling guide, 0 (AuthException) in WhatsApp's error codes. The `type`
 * `OAuthException` is no sign of one: Meta gives that type to most errors, WhatsApp's included.
 * https://developers.facebook.com/docs/graph-api/guides/error-handling
 * https://developers.facebook.com/documentation/business-messaging/whatsapp/support/error-codes
 */
export const INVALID_TOKEN_CODES: ReadonlySet<number> = new Set([0, 102, 190]);

/**
 * Error codes Meta documents as temporary or as throttling, where waiting and sending again is the
 * advice. Permission (10, 200-299), parameter (100), window (131047), undeliverable (131026) and
 * policy (368, 131048, 131049) errors are not here: the same send would fail again.
 */
export const RETRYABLE_CODES: ReadonlySet<number> = new Set([
  // Graph API error handling: 1 API Unknown and 2 API Service (temporary, downtime), 4 and 17 (too
  // many calls by the app or user), 341 (application limit reached).
  // https://developers.facebook.com/docs/graph-api/guides/error-handling
  1, 2, 4, 17, 341,
  // Graph API rate limiting: 32 Page-level and 613 custom-level throttling.
  // https://developers.facebook.com/docs/graph-api/overview/rate-limiting
  32, 613,
  // WhatsApp: 80007 (the WhatsApp Business Account's rate limit), 130429 (Cloud API throughput),
  // 131056 (pair rate limit: too many messages to one number), 131000 (something went wrong: try
  // again), 131016 (service temporarily unavailable).
  // https://developers.facebook.com/documentation/business-messaging/whatsapp/support/error-codes
  80007, 130429, 131056, 131000, 131016,
  // Messenger Send API: 1200 (temporary send message failure: try again later).
  // https://developers.facebook.com/docs/messenger-platform/reference/send-api/error-codes
  1200,
]);

/** The `error` object of Meta's error body. */
interface GraphErrorBody {
  message?: unknown;
  type?: unknown;
  code?: unknown;
  error_subcode?: unknown;
  is_transient?: unknown;
  error_data?: unknown;
  fbtrace_id?: unknown;
}

/**
 * Sends one message on a channel. Never throws: a network failure is a retryable error.
 * The token goes only into the Authorization header, never into a result.
 */
export async function sendToPlatform(
  settings: GraphSettings,
  channel: GraphChannel,
  accessToken: string,
  recipient: string,
  message: OutboundMessage,
  options: { timeoutMs?: number } = {},
): Promise<GraphSendResult> {
  const body = requestBody(channel.platform, recipient, message);
  if (typeof body === 'string')
    return { ok: false, kind: 'permanent', code: 'unsupported', message: body, httpStatus: null };
  const json = JSON.stringify(body);
  const request = { contentType: 'application/json', length: Buffer.byteLength(json), data: json };
  const response = await post(graphUrl(settings, channel, 'messages'), accessToken, request, options.timeoutMs);
  return sendResultOf(channel.platform, response, accessToken);
}

/**
 * Sends a file as a Messenger or Instagram attachment: uploaded and sent in one multipart request.
 * https://developers.facebook.com/docs/messenger-platform/send-messages#sending_attachments
 * https://developers.facebook.com/docs/messenger-platform/instagram/features/attachment-upload
 */
export async function sendAttachment(
  settings: GraphSettings,
  channel: GraphChannel,
  accessToken: string,
  recipient: string,
  type: string,
  file: OutboundFile,
): Promise<GraphSendResult> {
  const attachment = { type: ATTACHMENT_TYPES[type] ?? 'file', payload: { is_reusable: false } };
  const fields = {
    recipient: JSON.stringify({ id: recipient }),
    messaging_type: 'RESPONSE',
    message: JSON.stringify({ attachment }),
  };
  const request = multipart(fields, 'filedata', file);
  const response = await post(graphUrl(settings, channel, 'messages'), accessToken, request, UPLOAD_TIMEOUT_MS);
  return sendResultOf(channel.platform, response, accessToken);
}

/**
 * Uploads a file to a WhatsApp number's media, for a message that names it by the id this answers.
 * https://developers.facebook.com/documentation/business-messaging/whatsapp/business-phone-numbers/media
 */
export async function uploadWhatsAppMedia(
  settings: GraphSettings,
  channel: GraphChannel,
  accessToken: string,
  file: OutboundFile,
): Promise<{ ok: true; id: string } | GraphError> {
  const request = multipart({ messaging_product: 'whatsapp', type: file.mimeType }, 'file', file);
  const response = await post(graphUrl(settings, channel, 'media'), accessToken, request, UPLOAD_TIMEOUT_MS);
  if ('failure' in response) return response.failure;
  const json = parseJson(response.text);
  const error = isRecord(json) && isRecord(json.error) ? (json.error as GraphErrorBody) : undefined;
  const id = isRecord(json) && typeof json.id === 'string' && json.id.length > 0 ? json.id : undefined;
  if (!error && id && response.statusCode < 300) return { ok: true, id };
  const failed = error
    ? classifyGraphError(response.statusCode, error)
    : {
        ...networkFailure('permanent', 'unexpected_response', 'The media upload answered without an id'),
        httpStatus: response.statusCode,
      };
  return { ...failed, message: redact(failed.message, accessToken) };
}

type GraphSettings = Pick<Settings, 'graphApiUrl' | 'graphApiVersion'>;

const graphUrl = (settings: GraphSettings, channel: GraphChannel, edge: string) =>
  `${settings.graphApiUrl.replace(/\/+$/, '')}/${settings.graphApiVersion}/${encodeURIComponent(channel.external_id)}/${edge}`;

function sendResultOf(platform: Platform, response: PostOutcome, accessToken: string): GraphSendResult {
  const result = 'failure' in response ? response.failure : resultOf(platform, response.statusCode, response.text);
  return result.ok ? result : { ...result, message: redact(result.message, accessToken) };
}

/** A request body: its type, its length, and its bytes as a string or as a stream. */
interface PostBody {
  contentType: string;
  length: number;
  data: string | AsyncIterable<Buffer>;
}

/** A `multipart/form-data` body of text fields and one file, streamed: the file is never held whole. */
function multipart(fields: Record<string, string>, fileField: string, file: OutboundFile): PostBody {
  const boundary = `convo-${randomBytes(16).toString('hex')}`;
  // A quote or a line break would end the header; Meta reads the name only for display.
  const filename = (file.filename ?? 'file').replace(/["\r\n\\]/g, '_');
  const head = Buffer.from(
    `${Object.entries(fields)
      .map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`)
      .join('')}--${boundary}\r\nContent-Disposition: form-data; name="${fileField}"; filename="${filename}"\r\n` +
      `Content-Type: ${file.mimeType}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* data() {
    yield head;
    yield* file.bytes;
    yield tail;
  }
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    length: head.length + file.size + tail.length,
    data: data(),
  };
}

/** The Graph request body of a message, or why it cannot be sent on this platform. */
export function requestBody(
  platform: Platform,
  recipient: string,
  message: OutboundMessage,
): Record<string, unknown> | string {
  if (platform === 'whatsapp') {
    // https://developers.facebook.com/documentation/business-messaging/whatsapp/reference/
    //   whatsapp-business-phone-number/message-api
    const envelope = { messaging_product: 'whatsapp', recipient_type: 'individual', to: recipient };
    if (message.type === 'text') return { ...envelope, type: 'text', text: { body: message.content } };
    if (message.type === 'template') {
      if (!message.template) return 'A template message needs its template';
      const { name, language, components } = message.template;
      return {
        ...envelope,
        type: 'template',
        template: { name, language: { code: language }, ...(components ? { components } : {}) },
      };
    }
    if (message.mediaId !== undefined && ATTACHMENT_TYPES[message.type]) {
      const caption = message.type !== 'audio' && message.content.length > 0 ? { caption: message.content } : {};
      const filename = message.type === 'document' && message.filename ? { filename: message.filename } : {};
      return { ...envelope, type: message.type, [message.type]: { id: message.mediaId, ...caption, ...filename } };
    }
    return `Messages of type ${message.type} cannot be sent`;
  }
  // Messenger: https://developers.facebook.com/docs/messenger-platform/reference/send-api
  // Instagram: https://developers.facebook.com/docs/messenger-platform/instagram/features/send-message
  // RESPONSE: a reply within the 24-hour window, the only free-form messages Convo sends.
  if (message.type === 'text')
    return { recipient: { id: recipient }, messaging_type: 'RESPONSE', message: { text: message.content } };
  return `Messages of type ${message.type} cannot be sent on ${platform}`;
}

/** What an answer means: accepted with the platform's id, or a classified error. */
export function resultOf(platform: Platform, statusCode: number, text: string): GraphSendResult {
  const json = parseJson(text);
  const error = isRecord(json) && isRecord(json.error) ? (json.error as GraphErrorBody) : undefined;
  if (error) return classifyGraphError(statusCode, error);
  if (statusCode >= 200 && statusCode < 300) {
    const id = platformMessageIdOf(platform, json);
    if (id) return { ok: true, platformMessageId: id };
    // Meta may have taken the message: sending it again could deliver it twice.
    return {
      ok: false,
      kind: 'permanent',
      code: 'unexpected_response',
      message: 'The Graph API accepted the request without a message id',
      httpStatus: statusCode,
    };
  }
  const kind: GraphErrorKind =
    statusCode >= 500 || statusCode === 429 || statusCode === 408 ? 'retryable' : 'permanent';
  return {
    ok: false,
    kind,
    code: `http_${statusCode}`,
    message: `The Graph API answered HTTP ${statusCode} without an error body`,
    httpStatus: statusCode,
  };
}

/**
 * Classifies a Graph error by its code, as Meta advises (HTTP statuses are no reliable sign: some
 * throttling errors come as 400). A refused token comes first; then the documented temporary and
 * throttling codes, Meta's own `is_transient` flag (Instagram's errors carry it), and any 5xx or 429.
 * https://developers.facebook.com/documentation/instagram-platform/instagram-graph-api/reference/error-codes
 */
export function classifyGraphError(statusCode: number, error: GraphErrorBody): GraphError {
  const code = typeof error.code === 'number' ? error.code : Number(error.code);
  const codeText = Number.isFinite(code) ? String(code) : `http_${statusCode}`;
  const message = errorMessageOf(error, statusCode);
  let kind: GraphErrorKind = 'permanent';
  if (INVALID_TOKEN_CODES.has(code)) kind = 'invalid_token';
  else if (RETRYABLE_CODES.has(code) || error.is_transient === true || statusCode >= 500 || statusCode === 429)
    kind = 'retryable';
  return { ok: false, kind, code: codeText, message, httpStatus: statusCode };
}

/** Meta's message, with WhatsApp's `error_data.details` when it says more. */
function errorMessageOf(error: GraphErrorBody, statusCode: number): string {
  const message = typeof error.message === 'string' && error.message.length > 0 ? error.message : `HTTP ${statusCode}`;
  const details =
    isRecord(error.error_data) && typeof error.error_data.details === 'string' ? error.error_data.details : undefined;
  const full = details && !message.includes(details) ? `${message}: ${details}` : message;
  return full.slice(0, MAX_ERROR_MESSAGE_LENGTH);
}

function platformMessageIdOf(platform: Platform, json: unknown): string | undefined {
  if (!isRecord(json)) return undefined;
  if (platform === 'whatsapp') {
    const first = Array.isArray(json.messages) ? json.messages[0] : undefined;
    return isRecord(first) && typeof first.id === 'string' && first.id.length > 0 ? first.id : undefined;
  }
  return typeof json.message_id === 'string' && json.message_id.length > 0 ? json.message_id : undefined;
}

/** Whatever Meta or the network said, the token never reaches a message, a log line or a record. */
export const redact = (text: string, token: string): string =>
  token.length > 0 ? text.replaceAll(token, '[redacted]') : text;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

type PostOutcome = { statusCode: number; text: string } | { failure: GraphError };

/**
 * POSTs a body under one deadline for the whole exchange and reads at most MAX_RESPONSE_BYTES of the answer.
 * Redirects are not followed: the Graph API does not redirect sends.
 */
function post(url: string, accessToken: string, body: PostBody, timeoutMs = GRAPH_TIMEOUT_MS): Promise<PostOutcome> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve({
      failure: networkFailure('permanent', 'invalid_url', 'The Graph API address is not a valid URL'),
    });
  }
  const secure = target.protocol === 'https:';
  if (!secure && target.protocol !== 'http:') {
    return Promise.resolve({
      failure: networkFailure('permanent', 'invalid_url', `Unsupported protocol ${target.protocol}`),
    });
  }

  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: PostOutcome, complete = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve(outcome);
      if (!complete) req.destroy();
    };

    const req = (secure ? https : http).request(target, {
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      headers: {
        authorization: `Bearer ${accessToken}`,
        'content-type': body.contentType,
        accept: 'application/json',
        'content-length': String(body.length),
      },
    });
    const deadline = setTimeout(
      () =>
        finish({
          failure: networkFailure('retryable', 'timeout', `No answer from the Graph API within ${timeoutMs} ms`),
        }),
      timeoutMs,
    );

    req.on('error', (error: NodeJS.ErrnoException) => {
      const reason = [error.code, error.message]
        .filter((part) => typeof part === 'string' && part.length > 0)
        .join(': ');
      finish({ failure: networkFailure('retryable', 'network_error', reason || 'The request failed') });
    });
    req.on('response', (res) => {
      const statusCode = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > MAX_RESPONSE_BYTES) {
          finish({
            failure: {
              ...networkFailure('permanent', 'unexpected_response', 'The Graph API answer was too large'),
              httpStatus: statusCode,
            },
          });
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => finish({ statusCode, text: Buffer.concat(chunks).toString('utf8') }, true));
      res.on('error', (error) => finish({ failure: networkFailure('retryable', 'network_error', error.message) }));
      res.on('aborted', () =>
        finish({ failure: networkFailure('retryable', 'network_error', 'The answer was cut off') }),
      );
    });
    if (typeof body.data === 'string') req.end(body.data);
    else
      Readable.from(body.data)
        .on('error', (error) =>
          finish({
            failure: networkFailure('retryable', 'network_error', `Reading the file failed: ${error.message}`),
          }),
        )
        .pipe(req);
  });
}

export const networkFailure = (kind: GraphErrorKind, code: string, message: string): GraphError => ({
  ok: false,
  kind,
  code,
  message: message.slice(0, MAX_ERROR_MESSAGE_LENGTH),
  httpStatus: null,
});
