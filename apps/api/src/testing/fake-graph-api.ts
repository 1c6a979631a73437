/**
 * A local stand-in for Meta's Graph API (WhatsApp Cloud API, Messenger Platform, Instagram Messaging) over real HTTP.
 * Convo points `CONVO_GRAPH_API_URL` at it; it answers sends in Meta's formats, records every request, fails on demand,
 * and posts signed webhooks back to Convo the way Meta does. It checks only what Meta would reject, nothing more.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  createServer,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  DEFAULT_WABA_ID,
  type MessagingWebhookBody,
  type WhatsAppWebhookBody,
  instagramInbound,
  instagramRead,
  messagingText,
  messengerDelivery,
  messengerInbound,
  messengerRead,
  newMid,
  newWamid,
  signMetaPayload,
  signMetaPayloadSha1,
  waText,
  whatsappInbound,
  whatsappStatuses,
} from './meta-payloads.js';

export type MetaPlatform = 'whatsapp' | 'facebook' | 'instagram';
export type AutoStatus = 'sent' | 'delivered' | 'read';

export interface FakeChannelInput {
  platform: MetaPlatform;
  /** WhatsApp phone number id, Page id or Instagram account id: the `{id}` of `/{id}/messages`. */
  externalId: string;
  accessToken: string;
  appSecret: string;
  /** Where the fake posts this channel's webhooks (Convo's `/hooks/meta/:channel_id`). */
  webhookUrl: string;
  /** Statuses posted, in order, after each accepted send. */
  statusesAfterSend?: AutoStatus[];
  /** WhatsApp only: the business account id and display number the webhooks carry. */
  wabaId?: string;
  displayPhoneNumber?: string;
}

/** A Graph error to answer with: HTTP status plus the fields of Meta's `{error: {...}}` body. */
export interface FakeGraphError {
  httpStatus: number;
  code: number;
  message: string;
  /** Defaults to `OAuthException`, which Meta uses for most errors, not only auth ones. */
  type?: string;
  subcode?: number;
  /** WhatsApp's `error_data.details`. */
  details?: string;
  isTransient?: boolean;
}

/** `'network'` drops the connection without an answer, as a reset or timeout would look to the client. */
export type FakeFailure = FakeGraphError | 'network';

export interface RecordedRequest {
  method: string;
  /** Path without the query string, e.g. `/v21.0/1234/messages`. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  body: unknown;
  /** Arrival time in ms since the epoch. */
  at: number;
  /** The channel the request addressed (`me` resolved through the token), when it names one. */
  externalId?: string;
  /** True for `POST …/messages`, the requests scripted failures and rate checks count. */
  isSend: boolean;
  /** The files of a multipart body, by part name (the body shows each as `{filename, mime_type, size}`). */
  files?: Record<string, FakeFile>;
}

/** A file a client uploaded: to WhatsApp's media, or as a Messenger or Instagram attachment. */
export interface FakeFile {
  bytes: Buffer;
  mimeType: string;
  filename: string | null;
}

export interface AcceptedSend {
  platform: MetaPlatform;
  externalId: string;
  /** The recipient: a WhatsApp number as sent, or a PSID/IGSID. */
  to: string;
  /** The id the fake answered with: `wamid.…` or `m_…`. */
  platformId: string;
  /** WhatsApp `type`, or `text`/`attachment`/`sticker` for Messenger and Instagram. */
  type: string;
  body: unknown;
  at: number;
  /** The file the message carries: uploaded to WhatsApp's media and named by id, or sent as an attachment. */
  file?: FakeFile;
}

export interface PostedWebhook {
  externalId: string;
  url: string;
  rawBody: string;
  signature: string | null;
  /** Convo's answer, or a zero status and the error when the post itself failed. */
  status: number;
  text: string;
  at: number;
}

export interface PostWebhookOptions {
  /** Sign with another secret, to see Convo reject it. */
  appSecret?: string;
  /** Send this exact header value, or `null` for none. */
  signature?: string | null;
}

export interface FakeGraphApi {
  /** Origin to use as the Graph base address, e.g. `http://127.0.0.1:4010`. */
  url: string;
  readonly requests: RecordedRequest[];
  /** Every webhook the fake posted, with Convo's answers. */
  readonly webhooks: PostedWebhook[];
  connect(input: FakeChannelInput): void;
  disconnect(externalId: string): void;
  /** Accepted sends with their platform ids, optionally for one channel. */
  sent(externalId?: string): AcceptedSend[];
  /** The next `count` send requests (for `externalId` only, if given) fail with `error`, one each, in order. */
  failNext(count: number, error: FakeFailure, options?: { externalId?: string }): void;
  /** Delay before answering every Graph request. */
  setDelay(ms: number): void;
  /**
   * Media a customer sent: WhatsApp's `GET /{media-id}` answers its record (with the channel's token), its
   * URL the bytes (with the token); `url` is also what Messenger and Instagram webhooks carry (no token).
   */
  addMedia(media: { id: string; bytes: Buffer; mimeType: string; accessToken?: string; declaredSize?: number }): {
    url: string;
  };
  /** The next `count` media requests (record or bytes) fail with `error`, one each. */
  failMedia(count: number, error: FakeFailure): void;
  /**
   * A WhatsApp Business Account's message templates, as `GET /{waba-id}/message_templates` pages them (Meta's
   * shape: name, language, status, category, components), to a WhatsApp channel's token (or only `accessToken`).
   */
  setTemplates(businessAccountId: string, templates: object[], options?: { accessToken?: string }): void;
  /** The next `count` template list requests fail with `error`, one each. */
  failTemplates(count: number, error: FakeFailure): void;
  autoStatuses(externalId: string, statuses: AutoStatus[]): void;
  postWebhook(
    externalId: string,
    body: object,
    options?: PostWebhookOptions,
  ): Promise<{ status: number; text: string }>;
  /** Posts the platform's inbound text webhook from `from`, as if that customer wrote to the channel. */
  sendInbound(
    externalId: string,
    message: { from: string; name?: string; text: string },
  ): Promise<{ status: number; text: string; messageId: string; body: WhatsAppWebhookBody | MessagingWebhookBody }>;
  /** Most send requests for a channel that arrived within any `windowMs` span. */
  maxSendsInWindow(externalId: string, windowMs: number): number;
  /** Resolves once every status webhook scheduled so far has been posted. */
  idle(): Promise<void>;
  /** Forgets requests, sends, webhooks, pending failures and the delay; channels stay connected. */
  reset(): void;
  close(): Promise<void>;
}

// Meta's error answers ------------------------------------------------------------------------------------------------

const trace = (): string => randomBytes(9).toString('base64url');

/**
 * Errors Meta answers sends with, for `failNext`. Clients should classify on `code` (and `error_subcode`): Meta's HTTP
 * statuses are not a reliable retry signal, and some throttling and temporary errors arrive as Bad Request.
 */
export const META_ERRORS = {
  // https://developers.facebook.com/documentation/business-messaging/whatsapp/support/error-codes
  /** A media message names a media id the number never uploaded, or one expired. */
  unknownMedia: {
    httpStatus: 400,
    code: 131053,
    message: 'Media upload error',
    details: 'Unable to retrieve the media: the id is unknown or has expired.',
  },
  // https://developers.facebook.com/docs/graph-api/guides/error-handling
  /** Unknown, malformed or revoked token. */
  invalidToken: {
    httpStatus: 401,
    code: 190,
    type: 'OAuthException',
    message: 'Invalid OAuth access token - Cannot parse access token',
  },
  /** Expired token, told apart from a bad one by its subcode. */
  expiredToken: {
    httpStatus: 401,
    code: 190,
    subcode: 463,
    type: 'OAuthException',
    message: 'Error validating access token: Session has expired.',
  },
  /** Permission not granted or revoked. */
  permissionDenied: {
    httpStatus: 403,
    code: 10,
    message: '(#10) Application does not have permission for this action',
  },
  /** Graph throttling: app, user and Page request limits. */
  appRateLimit: { httpStatus: 400, code: 4, message: '(#4) Application request limit reached', isTransient: true },
  userRateLimit: { httpStatus: 400, code: 17, message: '(#17) User request limit reached', isTransient: true },
  pageRateLimit: { httpStatus: 400, code: 32, message: '(#32) Page request limit reached', isTransient: true },
  /** Temporary: unknown error and service down or overloaded. */
  apiUnknown: { httpStatus: 400, code: 1, message: 'An unknown error occurred', isTransient: true },
  apiService: {
    httpStatus: 503,
    code: 2,
    message: 'An unexpected error has occurred. Please retry your request later.',
    isTransient: true,
  },
  /** Permanent: a parameter Meta rejects. */
  invalidParameter: { httpStatus: 400, code: 100, message: '(#100) Invalid parameter' },

  // https://developers.facebook.com/documentation/business-messaging/whatsapp/support/error-codes
  whatsappRateLimit: {
    httpStatus: 400,
    code: 80007,
    message: '(#80007) Rate limit issues',
    details: 'The WhatsApp Business Account has reached its rate limit.',
  },
  whatsappThroughput: {
    httpStatus: 400,
    code: 130429,
    message: '(#130429) Rate limit hit',
    details: 'Cloud API message throughput has been reached.',
  },
  whatsappPairRateLimit: {
    httpStatus: 400,
    code: 131056,
    message: '(#131056) (Business Account, Consumer Account) pair rate limit hit',
    details:
      'Message failed to send because there were too many messages sent from this phone number to the same phone number in a short time.',
  },
  whatsappSomethingWentWrong: {
    httpStatus: 500,
    code: 131000,
    message: '(#131000) Something went wrong',
    details: 'Message failed to send due to an unknown error.',
  },
  whatsappUndeliverable: {
    httpStatus: 400,
    code: 131026,
    message: '(#131026) Message undeliverable',
    details: 'Unable to deliver message.',
  },
  whatsappReEngagement: {
    httpStatus: 400,
    code: 131047,
    message: '(#131047) Re-engagement message',
    details:
      'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
  },

  // https://developers.facebook.com/documentation/business-messaging/messenger-platform/error-codes
  messengerRateLimit: {
    httpStatus: 400,
    code: 613,
    message: '(#613) Calls to this api have exceeded the rate limit.',
    isTransient: true,
  },
  messengerUserUnavailable: {
    httpStatus: 400,
    code: 551,
    subcode: 1545041,
    message: "(#551) This person isn't available right now.",
  },
  messengerOutsideWindow: {
    httpStatus: 400,
    code: 10,
    subcode: 2018278,
    message: '(#10) This message is sent outside of allowed window.',
  },
} satisfies Record<string, FakeGraphError>;

/** What Meta answers when the `{id}` of a call names nothing the token can reach. */
export const unknownObjectError = (id: string, method: 'get' | 'post'): FakeGraphError => ({
  httpStatus: 400,
  code: 100,
  subcode: 33,
  type: 'GraphMethodException',
  message:
    `Unsupported ${method} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, ` +
    'or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api',
});

/** Meta's error body; WhatsApp's adds `error_data` with the product and details. */
export function graphErrorBody(error: FakeGraphError, platform?: MetaPlatform): { error: Record<string, unknown> } {
  const product = platform === 'whatsapp' ? { messaging_product: 'whatsapp' } : {};
  return {
    error: {
      message: error.message,
      type: error.type ?? 'OAuthException',
      code: error.code,
      ...(error.subcode !== undefined ? { error_subcode: error.subcode } : {}),
      ...(error.isTransient !== undefined ? { is_transient: error.isTransient } : {}),
      ...(error.details !== undefined ? { error_data: { ...product, details: error.details } } : {}),
      fbtrace_id: trace(),
    },
  };
}

// Request bodies ------------------------------------------------------------------------------------------------------

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const nonEmptyString = (value: unknown): value is string => typeof value === 'string' && value.length > 0;

/** The Graph API also takes form-encoded calls (Meta's curl examples use them), with JSON-ish values. */
function parseFormValue(value: string): unknown {
  for (const candidate of [value, value.replaceAll("'", '"')]) {
    try {
      return JSON.parse(candidate);
    } catch {}
  }
  return value;
}

/** A multipart body's text fields (JSON-looking ones parsed) and its files. */
async function parseMultipart(
  raw: Buffer,
  contentType: string,
): Promise<{ body: Record<string, unknown>; files: Record<string, FakeFile> }> {
  const form = await new Response(new Uint8Array(raw), { headers: { 'content-type': contentType } }).formData();
  const body: Record<string, unknown> = {};
  const files: Record<string, FakeFile> = {};
  const entries: [string, string | (Blob & { name?: string })][] = [];
  form.forEach((value, name) => {
    entries.push([name, value]);
  });
  for (const [name, value] of entries) {
    if (typeof value === 'string') {
      body[name] = parseFormValue(value);
      continue;
    }
    const file = { bytes: Buffer.from(await value.arrayBuffer()), mimeType: value.type, filename: value.name || null };
    files[name] = file;
    body[name] = { filename: file.filename, mime_type: file.mimeType, size: file.bytes.length };
  }
  return { body, files };
}

function parseBody(buffer: Buffer, contentType: string | undefined): unknown {
  if (buffer.length === 0) return undefined;
  const raw = buffer.toString('utf8');
  if (contentType?.includes('application/x-www-form-urlencoded')) {
    return Object.fromEntries([...new URLSearchParams(raw)].map(([k, v]) => [k, parseFormValue(v)]));
  }
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/** Room for the largest media Meta takes (WhatsApp documents, 100 MB). */
const MAX_BODY_BYTES = 110 * 1024 * 1024;

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

// Send validation -----------------------------------------------------------------------------------------------------

type Validation = { ok: true; to: string; type: string } | { ok: false; error: FakeGraphError };

const invalid = (message: string, details?: string): Validation => ({
  ok: false,
  error: { httpStatus: 400, code: 100, message, ...(details !== undefined ? { details } : {}) },
});

const WHATSAPP_TYPES = [
  'text',
  'image',
  'audio',
  'video',
  'document',
  'sticker',
  'location',
  'contacts',
  'template',
  'interactive',
  'reaction',
];
const WHATSAPP_MEDIA = ['image', 'audio', 'video', 'document', 'sticker'];

// https://developers.facebook.com/documentation/business-messaging/whatsapp/reference/whatsapp-business-phone-number/message-api
/** The checks Cloud API makes on `POST /{phone_number_id}/messages` that a client could get wrong. */
function validateWhatsApp(body: unknown): Validation {
  if (!isRecord(body)) return invalid('(#100) Invalid parameter', 'The request body must be a JSON object.');
  if (body.messaging_product !== 'whatsapp') return invalid('(#100) The parameter messaging_product is required.');
  if (!nonEmptyString(body.to)) return invalid('(#100) The parameter to is required.');
  // Cloud API treats a missing type as text.
  const type = body.type ?? 'text';
  if (typeof type !== 'string' || !WHATSAPP_TYPES.includes(type)) {
    return invalid(
      `(#100) Param type must be one of {${WHATSAPP_TYPES.map((t) => t.toUpperCase()).join(', ')}} - got "${String(type)}".`,
    );
  }
  const content = body[type];
  if (!isRecord(content) && !(type === 'contacts' && Array.isArray(content)))
    return invalid(`(#100) The parameter ${type} is required.`);
  if (type === 'text' && isRecord(content) && !nonEmptyString(content.body))
    return invalid("(#100) The parameter text['body'] is required.");
  if (type === 'template' && isRecord(content)) {
    if (!nonEmptyString(content.name)) return invalid("(#100) The parameter template['name'] is required.");
    const { language, components } = content;
    if (!isRecord(language) || !nonEmptyString(language.code))
      return invalid("(#100) The parameter template['language']['code'] is required.");
    if (components !== undefined && !Array.isArray(components))
      return invalid("(#100) Param template['components'] must be an array.");
  }
  if (
    WHATSAPP_MEDIA.includes(type) &&
    isRecord(content) &&
    !nonEmptyString(content.id) &&
    !nonEmptyString(content.link)
  ) {
    return invalid(`(#100) Invalid parameter`, `Either ${type}['id'] or ${type}['link'] must be provided.`);
  }
  if (type === 'reaction' && isRecord(content) && !nonEmptyString(content.message_id))
    return invalid("(#100) The parameter reaction['message_id'] is required.");
  if (
    type === 'location' &&
    isRecord(content) &&
    (typeof content.latitude !== 'number' || typeof content.longitude !== 'number')
  ) {
    return invalid("(#100) The parameters location['latitude'] and location['longitude'] are required.");
  }
  if (type === 'interactive' && isRecord(content) && !nonEmptyString(content.type)) {
    return invalid("(#100) The parameter interactive['type'] is required.");
  }
  return { ok: true, to: body.to, type };
}

const MESSAGING_TYPES = ['RESPONSE', 'UPDATE', 'MESSAGE_TAG'];
const SENDER_ACTIONS = ['typing_on', 'typing_off', 'mark_seen', 'react', 'unreact'];

// https://developers.facebook.com/docs/messenger-platform/reference/send-api
/**
 * The checks the Send API makes on `POST /{page_or_ig_id}/messages`. Messenger requires `messaging_type`; Instagram's
 * own examples omit it, so it is checked there only when present. `type` is `sender_action` for typing and read marks.
 */
function validateMessaging(body: unknown, platform: 'facebook' | 'instagram'): Validation {
  if (!isRecord(body)) return invalid('(#100) Invalid parameter');
  const recipient = body.recipient;
  if (!isRecord(recipient)) return invalid('(#100) The parameter recipient is required');
  const to = [recipient.id, recipient.user_ref, recipient.comment_id, recipient.post_id].find(nonEmptyString);
  if (to === undefined) return invalid('(#100) The parameter recipient is required');
  if (body.sender_action !== undefined) {
    const action = body.sender_action;
    if (typeof action !== 'string' || !SENDER_ACTIONS.includes(action))
      return invalid('(#100) Param sender_action is invalid');
    return { ok: true, to, type: 'sender_action' };
  }
  const messagingType = body.messaging_type;
  if (messagingType === undefined && platform === 'facebook')
    return invalid('(#100) The parameter messaging_type is required');
  if (messagingType !== undefined && (typeof messagingType !== 'string' || !MESSAGING_TYPES.includes(messagingType))) {
    return invalid(
      `(#100) Param messaging_type must be one of {${MESSAGING_TYPES.join(', ')}} - got "${String(messagingType)}".`,
    );
  }
  if (messagingType === 'MESSAGE_TAG' && !nonEmptyString(body.tag))
    return invalid('(#100) Tag is required for MESSAGE_TAG messaging type.');
  const message = body.message;
  if (!isRecord(message)) return invalid('(#100) Must send either message or sender_action');
  if (nonEmptyString(message.text)) return { ok: true, to, type: 'text' };
  if (
    isRecord(message.attachment) &&
    nonEmptyString(message.attachment.type) &&
    message.attachment.payload !== undefined
  ) {
    return { ok: true, to, type: 'attachment' };
  }
  if (Array.isArray(message.attachments) && message.attachments.length > 0) return { ok: true, to, type: 'attachment' };
  if (message.sticker_id !== undefined) return { ok: true, to, type: 'sticker' };
  return invalid('(#100) Message cannot be empty, must provide valid attachment or text');
}

// The server ----------------------------------------------------------------------------------------------------------

const SEND_PATH = /^\/(?:v\d+\.\d+\/)?([^/]+)\/messages\/?$/;
const UPLOAD_PATH = /^\/(?:v\d+\.\d+\/)?([^/]+)\/media\/?$/;
const TEMPLATES_PATH = /^\/(?:v\d+\.\d+\/)?([^/]+)\/message_templates\/?$/;
const OBJECT_PATH = /^\/(?:v\d+\.\d+\/)?([^/]+)\/?$/;
const WEBHOOK_TIMEOUT_MS = 10_000;

interface Channel extends FakeChannelInput {
  statusesAfterSend: AutoStatus[];
}

const sendJson = (res: ServerResponse, status: number, body: unknown): void => {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=UTF-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
};

/** `fetch failed` alone hides why; its cause says refused, reset or timed out. */
function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function bearer(req: IncomingMessage, query: Record<string, string>, body: unknown): string | undefined {
  const header = req.headers.authorization;
  if (header?.startsWith('Bearer ')) return header.slice('Bearer '.length).trim();
  if (query.access_token) return query.access_token;
  if (isRecord(body) && typeof body.access_token === 'string') return body.access_token;
  return undefined;
}

/** Checks the control API's `connect` input, accepting camelCase or snake_case keys for hand-typed curl. */
function parseChannelInput(body: unknown): FakeChannelInput | string {
  if (!isRecord(body)) return 'body must be a JSON object';
  const pick = (camel: string, snake: string): unknown => body[camel] ?? body[snake];
  const platform = pick('platform', 'platform');
  if (platform !== 'whatsapp' && platform !== 'facebook' && platform !== 'instagram')
    return 'platform must be whatsapp, facebook or instagram';
  const fields = {
    externalId: pick('externalId', 'external_id'),
    accessToken: pick('accessToken', 'access_token'),
    appSecret: pick('appSecret', 'app_secret'),
    webhookUrl: pick('webhookUrl', 'webhook_url'),
  };
  for (const [name, value] of Object.entries(fields)) if (!nonEmptyString(value)) return `${name} is required`;
  const statuses = pick('statusesAfterSend', 'statuses_after_send') ?? [];
  if (!Array.isArray(statuses) || !statuses.every((s) => s === 'sent' || s === 'delivered' || s === 'read')) {
    return 'statusesAfterSend must be a list of sent, delivered, read';
  }
  const wabaId = pick('wabaId', 'waba_id');
  const displayPhoneNumber = pick('displayPhoneNumber', 'display_phone_number');
  return {
    platform,
    externalId: String(fields.externalId),
    accessToken: String(fields.accessToken),
    appSecret: String(fields.appSecret),
    webhookUrl: String(fields.webhookUrl),
    statusesAfterSend: statuses,
    ...(nonEmptyString(wabaId) ? { wabaId } : {}),
    ...(nonEmptyString(displayPhoneNumber) ? { displayPhoneNumber } : {}),
  };
}

export interface FakeGraphOptions {
  port?: number;
  host?: string;
  /** Templates every business account lists to any token, for suites (the route fuzz) that make up their own. */
  templatesForAnyAccount?: object[];
}

export async function startFakeGraphApi(options: FakeGraphOptions = {}): Promise<FakeGraphApi> {
  const channels = new Map<string, Channel>();
  /** Names customers gave through `sendInbound`, served by the Messenger and Instagram profile lookups. */
  const profiles = new Map<string, { name: string; platform: MetaPlatform }>();
  const requests: RecordedRequest[] = [];
  const accepted: AcceptedSend[] = [];
  const webhooks: PostedWebhook[] = [];
  let failures: Array<{ error: FakeFailure; externalId?: string }> = [];
  const media = new Map<string, { bytes: Buffer; mimeType: string; accessToken?: string; declaredSize?: number }>();
  let mediaFailures: FakeFailure[] = [];
  const templateSets = new Map<string, { templates: object[]; accessToken?: string }>();
  let templateFailures: FakeFailure[] = [];
  /** Files uploaded to WhatsApp numbers' media, by the id the upload answered. */
  const uploads = new Map<string, FakeFile & { externalId: string }>();
  let delayMs = 0;
  const pending = new Set<Promise<void>>();
  const aborter = new AbortController();

  const channelFor = (externalId: string): Channel => {
    const channel = channels.get(externalId);
    if (!channel) throw new Error(`fake Graph API: no channel ${externalId} is connected`);
    return channel;
  };
  /** `me` means the Page or Instagram account whose token made the call. */
  const resolveId = (id: string, token: string | undefined): string | undefined =>
    id === 'me'
      ? [...channels.values()].find((c) => c.platform !== 'whatsapp' && c.accessToken === token)?.externalId
      : id;

  async function postWebhook(
    externalId: string,
    body: object,
    options: PostWebhookOptions = {},
  ): Promise<{ status: number; text: string }> {
    const channel = channelFor(externalId);
    const rawBody = JSON.stringify(body);
    const secret = options.appSecret ?? channel.appSecret;
    const signature = options.signature === undefined ? signMetaPayload(secret, rawBody) : options.signature;
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'facebookexternalua' };
    if (signature !== null) headers['x-hub-signature-256'] = signature;
    if (options.signature === undefined) headers['x-hub-signature'] = signMetaPayloadSha1(secret, rawBody);
    const record: PostedWebhook = {
      externalId,
      url: channel.webhookUrl,
      rawBody,
      signature,
      status: 0,
      text: '',
      at: Date.now(),
    };
    webhooks.push(record);
    try {
      const response = await fetch(channel.webhookUrl, {
        method: 'POST',
        headers,
        body: rawBody,
        signal: AbortSignal.any([aborter.signal, AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)]),
      });
      record.status = response.status;
      record.text = await response.text();
    } catch (error) {
      record.text = describeError(error);
      throw error;
    }
    return { status: record.status, text: record.text };
  }

  /** Posts the channel's status receipts for one accepted send, in order, each after the previous answer. */
  async function postStatuses(channel: Channel, send: AcceptedSend): Promise<void> {
    for (const status of channel.statusesAfterSend) {
      let body: object | undefined;
      if (channel.platform === 'whatsapp') {
        body = whatsappStatuses({
          ...(channel.wabaId ? { wabaId: channel.wabaId } : {}),
          phoneNumberId: channel.externalId,
          ...(channel.displayPhoneNumber ? { displayPhoneNumber: channel.displayPhoneNumber } : {}),
          statuses: [{ id: send.platformId, status, recipientId: send.to.replace(/\D/g, '') }],
        });
      } else if (channel.platform === 'facebook') {
        // Messenger has no "sent" receipt: the Send API's answer is the acceptance.
        if (status === 'delivered') {
          body = messengerInbound({
            pageId: channel.externalId,
            events: [
              messengerDelivery({
                from: send.to,
                to: channel.externalId,
                mids: [send.platformId],
                watermark: Date.now(),
              }),
            ],
          });
        } else if (status === 'read') {
          const read = messengerRead({ from: send.to, to: channel.externalId, watermark: Date.now() });
          body = messengerInbound({ pageId: channel.externalId, events: [read] });
        }
      } else if (status === 'read') {
        // Instagram sends only read receipts (messaging_seen), naming the message.
        const read = instagramRead({ from: send.to, to: channel.externalId, mid: send.platformId });
        body = instagramInbound({ igId: channel.externalId, events: [read] });
      }
      if (body === undefined) continue;
      try {
        await postWebhook(channel.externalId, body);
      } catch {
        // Recorded in `webhooks`; a receiver that is down must not break the sender's test.
      }
    }
  }

  const schedule = (work: () => Promise<void>): void => {
    const promise = work().finally(() => pending.delete(promise));
    pending.add(promise);
  };

  function takeFailure(externalId: string | undefined): FakeFailure | undefined {
    const index = failures.findIndex((f) => f.externalId === undefined || f.externalId === externalId);
    if (index === -1) return undefined;
    const [failure] = failures.splice(index, 1);
    return failure?.error;
  }

  /** WhatsApp's media record (`GET /{media-id}`), or a media's bytes (`GET /_media/{id}`). */
  function handleMedia(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    token: string | undefined,
    recordId: string | undefined,
  ): void {
    const failure = mediaFailures.shift();
    if (failure === 'network') {
      req.socket.destroy();
      return;
    }
    if (failure) {
      sendJson(res, failure.httpStatus, graphErrorBody(failure));
      return;
    }
    const bytesId = path.startsWith('/_media/') ? decodeURIComponent(path.slice('/_media/'.length)) : undefined;
    const id = bytesId ?? (recordId as string);
    const found = media.get(id);
    if (!found) {
      sendJson(res, bytesId === undefined ? 400 : 404, graphErrorBody(unknownObjectError(id, 'get')));
      return;
    }
    if (found.accessToken !== undefined && token !== found.accessToken) {
      sendJson(res, 401, graphErrorBody(META_ERRORS.invalidToken));
      return;
    }
    if (bytesId === undefined) {
      sendJson(res, 200, {
        messaging_product: 'whatsapp',
        url: `${api.url}/_media/${encodeURIComponent(id)}`,
        mime_type: found.mimeType,
        sha256: createHash('sha256').update(found.bytes).digest('hex'),
        file_size: found.declaredSize ?? found.bytes.length,
        id,
      });
      return;
    }
    res.writeHead(200, { 'content-type': found.mimeType, 'content-length': String(found.bytes.length) });
    res.end(found.bytes);
  }

  async function handleSend(
    req: IncomingMessage,
    res: ServerResponse,
    record: RecordedRequest,
    rawId: string,
  ): Promise<void> {
    const token = bearer(req, record.query, record.body);
    const failure = takeFailure(record.externalId);
    if (failure === 'network') {
      req.socket.destroy();
      return;
    }
    const channel = record.externalId === undefined ? undefined : channels.get(record.externalId);
    if (failure) return sendJson(res, failure.httpStatus, graphErrorBody(failure, channel?.platform));
    const tokenKnown = [...channels.values()].some((c) => c.accessToken === token);
    if (!channel) {
      if (!tokenKnown) return sendJson(res, 401, graphErrorBody(META_ERRORS.invalidToken));
      return sendJson(res, 400, graphErrorBody(unknownObjectError(rawId, 'post')));
    }
    if (token !== channel.accessToken) return sendJson(res, 401, graphErrorBody(META_ERRORS.invalidToken));

    const validation =
      channel.platform === 'whatsapp'
        ? validateWhatsApp(record.body)
        : validateMessaging(record.body, channel.platform);
    if (!validation.ok)
      return sendJson(res, validation.error.httpStatus, graphErrorBody(validation.error, channel.platform));
    const file = attachedFile(channel, validation.type, record);
    if (file === 'unknown') return sendJson(res, 400, graphErrorBody(META_ERRORS.unknownMedia, channel.platform));

    if (validation.type === 'sender_action') return sendJson(res, 200, { recipient_id: validation.to });
    const platformId = channel.platform === 'whatsapp' ? newWamid() : newMid();
    const send: AcceptedSend = {
      platform: channel.platform,
      externalId: channel.externalId,
      to: validation.to,
      platformId,
      type: validation.type,
      body: record.body,
      at: record.at,
      ...(file ? { file } : {}),
    };
    accepted.push(send);
    if (channel.statusesAfterSend.length > 0) res.on('finish', () => schedule(() => postStatuses(channel, send)));
    if (channel.platform === 'whatsapp') {
      // https://developers.facebook.com/documentation/business-messaging/whatsapp/reference/whatsapp-business-phone-number/message-api
      return sendJson(res, 200, {
        messaging_product: 'whatsapp',
        contacts: [{ input: validation.to, wa_id: validation.to.replace(/\D/g, '') }],
        messages: [{ id: platformId, ...(validation.type === 'template' ? { message_status: 'accepted' } : {}) }],
      });
    }
    // https://developers.facebook.com/docs/messenger-platform/reference/send-api (no recipient_id for user_ref
    // recipients)
    const recipient = isRecord(record.body) && isRecord(record.body.recipient) ? record.body.recipient : {};
    return sendJson(res, 200, {
      ...(nonEmptyString(recipient.id) ? { recipient_id: recipient.id } : {}),
      message_id: platformId,
    });
  }

  /**
   * The file a send carries: a WhatsApp media message names an upload by id (an unknown id is refused); a
   * Messenger or Instagram attachment may come as the request's `filedata` part.
   */
  function attachedFile(channel: Channel, type: string, record: RecordedRequest): FakeFile | 'unknown' | undefined {
    if (channel.platform !== 'whatsapp') return record.files?.filedata;
    const content = isRecord(record.body) ? record.body[type] : undefined;
    if (!WHATSAPP_MEDIA.includes(type) || !isRecord(content) || !nonEmptyString(content.id)) return undefined;
    const upload = uploads.get(content.id);
    if (!upload || upload.externalId !== channel.externalId) return 'unknown';
    const { externalId: _, ...file } = upload;
    return file;
  }

  // https://developers.facebook.com/documentation/business-messaging/whatsapp/reference/whatsapp-business-account/message-templates-api
  /** `GET /{waba-id}/message_templates`: a page of `limit` (25 by default) after the `after` cursor, with `paging`. */
  function handleTemplates(
    req: IncomingMessage,
    res: ServerResponse,
    record: RecordedRequest,
    businessAccountId: string,
    token: string | undefined,
  ) {
    const failure = templateFailures.shift();
    if (failure === 'network') {
      req.socket.destroy();
      return;
    }
    if (failure) return sendJson(res, failure.httpStatus, graphErrorBody(failure));
    const listed = templateSets.get(businessAccountId);
    const anyAccount = options.templatesForAnyAccount;
    const set = listed ?? (anyAccount ? { templates: anyAccount } : undefined);
    const whatsappToken = [...channels.values()].some((c) => c.platform === 'whatsapp' && c.accessToken === token);
    const allowed = listed?.accessToken
      ? token === listed.accessToken
      : whatsappToken || (!listed && set !== undefined);
    if (!allowed) return sendJson(res, 401, graphErrorBody(META_ERRORS.invalidToken));
    if (!set) return sendJson(res, 400, graphErrorBody(unknownObjectError(businessAccountId, 'get')));
    const limit = Math.min(Math.max(Number(record.query.limit ?? 25) || 25, 1), 1000);
    const start = record.query.after ? Number(Buffer.from(record.query.after, 'base64url').toString()) : 0;
    const end = Math.min(start + limit, set.templates.length);
    const cursor = (index: number) => Buffer.from(String(index)).toString('base64url');
    const next = new URL(`${api.url}${record.path}`);
    for (const [name, value] of Object.entries(record.query)) next.searchParams.set(name, value);
    next.searchParams.set('after', cursor(end));
    sendJson(res, 200, {
      data: set.templates.slice(start, end),
      paging: {
        cursors: { before: cursor(start), after: cursor(end) },
        ...(end < set.templates.length ? { next: next.toString() } : {}),
      },
    });
  }

  // https://developers.facebook.com/documentation/business-messaging/whatsapp/business-phone-numbers/media
  /** `POST /{phone_number_id}/media`: a multipart `file` with `messaging_product` and `type`; answers its id. */
  function handleUpload(res: ServerResponse, record: RecordedRequest, externalId: string, token: string | undefined) {
    const channel = channels.get(externalId);
    if (channel?.platform !== 'whatsapp' || token !== channel.accessToken)
      return sendJson(res, 401, graphErrorBody(META_ERRORS.invalidToken));
    const body = isRecord(record.body) ? record.body : {};
    const file = record.files?.file;
    if (body.messaging_product !== 'whatsapp')
      return sendJson(
        res,
        400,
        graphErrorBody({ httpStatus: 400, code: 100, message: '(#100) The parameter messaging_product is required.' }),
      );
    if (!file)
      return sendJson(
        res,
        400,
        graphErrorBody({ httpStatus: 400, code: 100, message: '(#100) The parameter file is required.' }),
      );
    const id = String(1_000_000_000_000_000n + BigInt(uploads.size + 1) * 7919n);
    uploads.set(id, { ...file, mimeType: typeof body.type === 'string' ? body.type : file.mimeType, externalId });
    sendJson(res, 200, { id });
  }

  // https://developers.facebook.com/docs/messenger-platform/identity/user-profile
  /** Messenger and Instagram profile lookups of customers introduced through `sendInbound`. */
  function handleProfile(res: ServerResponse, record: RecordedRequest, id: string, token: string | undefined): void {
    const reachable = [...channels.values()].some((c) => c.platform !== 'whatsapp' && c.accessToken === token);
    const profile = profiles.get(id);
    if (!reachable || !profile) {
      sendJson(
        res,
        reachable ? 400 : 401,
        graphErrorBody(reachable ? unknownObjectError(id, 'get') : META_ERRORS.invalidToken),
      );
      return;
    }
    const [first = '', ...rest] = profile.name.split(' ');
    const all: Record<string, string> =
      profile.platform === 'instagram'
        ? { name: profile.name, username: profile.name.toLowerCase().replace(/[^a-z0-9._]/g, '') }
        : { first_name: first, last_name: rest.join(' ') };
    const wanted = record.query.fields?.split(',').map((f) => f.trim());
    const fields = wanted ? Object.fromEntries(Object.entries(all).filter(([k]) => wanted.includes(k))) : all;
    sendJson(res, 200, { ...fields, id });
  }

  async function sendInbound(externalId: string, message: { from: string; name?: string; text: string }) {
    const channel = channelFor(externalId);
    let body: WhatsAppWebhookBody | MessagingWebhookBody;
    let messageId: string;
    if (channel.platform === 'whatsapp') {
      const inbound = waText({ from: message.from, body: message.text });
      messageId = inbound.id;
      body = whatsappInbound({
        wabaId: channel.wabaId ?? DEFAULT_WABA_ID,
        phoneNumberId: externalId,
        ...(channel.displayPhoneNumber ? { displayPhoneNumber: channel.displayPhoneNumber } : {}),
        contacts: [{ waId: message.from, ...(message.name !== undefined ? { name: message.name } : {}) }],
        messages: [inbound],
      });
    } else {
      // Messenger and Instagram webhooks carry no name; Convo looks it up, so the fake remembers it for the profile
      // call.
      if (message.name !== undefined) profiles.set(message.from, { name: message.name, platform: channel.platform });
      messageId = newMid();
      const event = messagingText({ from: message.from, to: externalId, text: message.text, mid: messageId });
      const events = [event];
      body =
        channel.platform === 'facebook'
          ? messengerInbound({ pageId: externalId, events })
          : instagramInbound({ igId: externalId, events });
    }
    const answer = await postWebhook(externalId, body);
    return { ...answer, messageId, body };
  }

  async function handleControl(req: IncomingMessage, res: ServerResponse, path: string, body: unknown): Promise<void> {
    if (req.method === 'POST' && path === '/_fake/connect') {
      const input = parseChannelInput(body);
      if (typeof input === 'string') return sendJson(res, 400, { error: input });
      api.connect(input);
      return sendJson(res, 200, {
        connected: { platform: input.platform, externalId: input.externalId, webhookUrl: input.webhookUrl },
      });
    }
    if (req.method === 'POST' && path === '/_fake/inbound') {
      if (!isRecord(body)) return sendJson(res, 400, { error: 'body must be a JSON object' });
      const externalId = body.external_id ?? body.externalId;
      const { from, name, text } = body;
      if (!nonEmptyString(externalId) || !channels.has(externalId))
        return sendJson(res, 404, { error: 'external_id names no connected channel' });
      if (!nonEmptyString(from) || !nonEmptyString(text))
        return sendJson(res, 400, { error: 'from and text are required' });
      try {
        const answer = await sendInbound(externalId, { from, text, ...(nonEmptyString(name) ? { name } : {}) });
        // Convo's own status, so a rejected webhook shows as one in curl.
        return sendJson(res, answer.status, { status: answer.status, text: answer.text, message_id: answer.messageId });
      } catch (error) {
        return sendJson(res, 502, { error: `posting the webhook failed: ${describeError(error)}` });
      }
    }
    if (req.method === 'POST' && path === '/_fake/templates') {
      const input = isRecord(body) ? body : {};
      const { business_account_id: waba, templates, access_token: token } = input;
      if (!nonEmptyString(waba) || !Array.isArray(templates))
        return sendJson(res, 400, { error: 'business_account_id and templates (a list) are required' });
      api.setTemplates(waba, templates, nonEmptyString(token) ? { accessToken: token } : {});
      return sendJson(res, 200, { business_account_id: waba, templates: templates.length });
    }
    if (req.method === 'GET' && path === '/_fake/sent') return sendJson(res, 200, accepted);
    sendJson(res, 404, {
      error: 'control routes: POST /_fake/connect, POST /_fake/inbound, POST /_fake/templates, GET /_fake/sent',
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = Date.now();
    const url = new URL(req.url ?? '/', 'http://fake.invalid');
    const path = url.pathname;
    const query = Object.fromEntries(url.searchParams);
    const raw = await readBody(req);
    const contentType = req.headers['content-type'];
    const form = contentType?.startsWith('multipart/form-data') ? await parseMultipart(raw, contentType) : undefined;
    const body = form ? form.body : parseBody(raw, contentType);
    if (path.startsWith('/_fake/')) return handleControl(req, res, path, body);

    const sendMatch = req.method === 'POST' ? SEND_PATH.exec(path) : null;
    const uploadMatch = req.method === 'POST' ? UPLOAD_PATH.exec(path) : null;
    const objectMatch = req.method === 'GET' ? OBJECT_PATH.exec(path) : null;
    const rawId = sendMatch?.[1] ?? uploadMatch?.[1] ?? objectMatch?.[1];
    const token = bearer(req, query, body);
    const externalId = rawId === undefined ? undefined : resolveId(decodeURIComponent(rawId), token);
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path,
      query,
      headers: req.headers,
      body,
      at,
      ...(externalId !== undefined ? { externalId } : {}),
      isSend: sendMatch !== null,
      ...(form ? { files: form.files } : {}),
    };
    requests.push(record);
    if (delayMs > 0) await sleep(delayMs);

    const templatesMatch = req.method === 'GET' ? TEMPLATES_PATH.exec(path) : null;
    if (templatesMatch?.[1] !== undefined)
      return handleTemplates(req, res, record, decodeURIComponent(templatesMatch[1]), token);
    // A WhatsApp token's GET of an object is a media record's (WhatsApp has no profiles to look up).
    const whatsappToken = [...channels.values()].some((c) => c.platform === 'whatsapp' && c.accessToken === token);
    if (
      req.method === 'GET' &&
      (path.startsWith('/_media/') || (rawId !== undefined && (media.has(decodeURIComponent(rawId)) || whatsappToken)))
    )
      return handleMedia(req, res, path, token, rawId === undefined ? undefined : decodeURIComponent(rawId));
    if (sendMatch && rawId !== undefined) return handleSend(req, res, record, decodeURIComponent(rawId));
    if (uploadMatch && externalId !== undefined) return handleUpload(res, record, externalId, token);
    if (objectMatch && externalId !== undefined) return handleProfile(res, record, externalId, token);
    sendJson(res, 400, graphErrorBody({ httpStatus: 400, code: 2500, message: `Unknown path components: ${path}` }));
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        sendJson(
          res,
          500,
          graphErrorBody({ httpStatus: 500, code: 1, message: `fake Graph API failure: ${String(error)}` }),
        );
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  const api: FakeGraphApi = {
    url: `http://${host}:${address.port}`,
    requests,
    webhooks,
    connect(input) {
      channels.set(input.externalId, { ...input, statusesAfterSend: [...(input.statusesAfterSend ?? [])] });
    },
    disconnect(externalId) {
      channels.delete(externalId);
    },
    sent(externalId) {
      return externalId === undefined ? [...accepted] : accepted.filter((s) => s.externalId === externalId);
    },
    failNext(count, error, failOptions = {}) {
      const scope = failOptions.externalId !== undefined ? { externalId: failOptions.externalId } : {};
      for (let i = 0; i < count; i++) failures.push({ error, ...scope });
    },
    setDelay(ms) {
      delayMs = ms;
    },
    addMedia(input) {
      const { id, ...rest } = input;
      media.set(id, rest);
      return { url: `${api.url}/_media/${encodeURIComponent(id)}` };
    },
    failMedia(count, error) {
      for (let i = 0; i < count; i++) mediaFailures.push(error);
    },
    setTemplates(businessAccountId, templates, templateOptions = {}) {
      templateSets.set(businessAccountId, { templates, ...templateOptions });
    },
    failTemplates(count, error) {
      for (let i = 0; i < count; i++) templateFailures.push(error);
    },
    autoStatuses(externalId, statuses) {
      channelFor(externalId).statusesAfterSend = [...statuses];
    },
    postWebhook,
    sendInbound,
    maxSendsInWindow(externalId, windowMs) {
      const times = requests.filter((r) => r.isSend && r.externalId === externalId).map((r) => r.at);
      let most = 0;
      for (let start = 0, end = 0; end < times.length; end++) {
        while ((times[end] ?? 0) - (times[start] ?? 0) >= windowMs) start++;
        most = Math.max(most, end - start + 1);
      }
      return most;
    },
    async idle() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
    reset() {
      requests.length = 0;
      accepted.length = 0;
      webhooks.length = 0;
      failures = [];
      mediaFailures = [];
      templateFailures = [];
      uploads.clear();
      delayMs = 0;
      profiles.clear();
    },
    async close() {
      aborter.abort();
      await Promise.allSettled([...pending]);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return api;
}
