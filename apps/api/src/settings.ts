import { randomBytes } from 'node:crypto';

/** Behaviour the operator can switch, read by env.ts or built directly by tests. */
export interface Settings {
  /** Webhook URLs may be plain http and point at loopback/private addresses (development, tests). */
  allowPrivateWebhooks: boolean;
  /** POST /v1/sandbox/inbound is served (and documented). */
  sandboxEnabled: boolean;
  /** Waits before each retry of a failed delivery; after the last, the delivery is `failed`. */
  webhookRetryScheduleMs: readonly number[];
  /** A delivery attempt that has no complete answer by then fails. */
  webhookTimeoutMs: number;
  /** Failed authentications allowed per client address and minute before 429 (brute-force guard). */
  authFailuresPerMinute: number;
  /** Where clients and Meta reach the server (a channel's `webhook_url` starts with it). */
  publicUrl: string;
  /** The key that seals channels' secrets at rest (secret-box.ts); read when first needed. */
  secretKey: () => Buffer;
  /** The Graph API's origin (CONVO_GRAPH_API_URL): Meta's, or a local fake in tests. */
  graphApiUrl: string;
  /** The Graph API version in every call's path. */
  graphApiVersion: string;
  /** Sends per second and channel, across workers; the default is WhatsApp's default throughput. */
  channelSendsPerSecond: number;
  /** Waits before each retry of a send the platform may take later; after the last, the message fails. */
  channelSendRetryScheduleMs: readonly number[];
  /** How often a status for a message not yet known (its send not yet recorded) is looked at again. */
  channelPayloadRetryScheduleMs: readonly number[];
  /** The console's session cookie is `Secure` (production: served over https). */
  secureCookies: boolean;
  /** The console's build served at /console (apps/console/dist), if there is one. */
  consoleDir: string | undefined;
  /** A request's line and headers must have arrived this long after it began. */
  headersTimeoutMs: number;
  /** The whole request must have arrived by then: a body that trickles or stops gets 400 and the connection closes. */
  requestTimeoutMs: number;
  /** Longer than a balancer's idle timeout, so the balancer never reuses a kept-alive connection being closed. */
  keepAliveTimeoutMs: number;
  /** A connection on which nothing moves either way for this long is dropped. */
  idleTimeoutMs: number;
  /**
   * Load balancers whose `X-Forwarded-For` names the client: without them every client behind a balancer is one
   * address to the per-address guards.
   */
  trustedProxies: string | false;
  /** How many days the request log keeps an API request (the console's Logs). */
  requestLogDays: number;
  /** A folder for new files' bytes (CONVO_FILES_DIR); without it they are kept in the database. */
  filesDir: string | undefined;
  /** How often an event stream with nothing to send writes a comment, so proxies keep it open (CONTRACT: at most 15 s). */
  eventStreamKeepAliveMs: number;
}

/** The delivery retry schedule CONTRACT fixes (Events and webhooks). */
export const WEBHOOK_RETRY_SCHEDULE_MS = [
  5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
] as const;

/** Long enough in total that a platform's outage of most of an hour loses no message. */
export const CHANNEL_SEND_RETRY_SCHEDULE_MS = [1_000, 5_000, 30_000, 120_000, 600_000, 1_800_000] as const;

/** Without a configured key (tests that build settings directly), one key per process. */
const processSecretKey = randomBytes(32);

export const defaultSettings = (overrides: Partial<Settings> = {}): Settings => ({
  allowPrivateWebhooks: false,
  sandboxEnabled: false,
  webhookRetryScheduleMs: WEBHOOK_RETRY_SCHEDULE_MS,
  webhookTimeoutMs: 15_000,
  authFailuresPerMinute: 30,
  publicUrl: 'http://127.0.0.1:3000',
  secretKey: () => processSecretKey,
  graphApiUrl: 'https://graph.facebook.com',
  graphApiVersion: 'v23.0',
  channelSendsPerSecond: 80,
  channelSendRetryScheduleMs: CHANNEL_SEND_RETRY_SCHEDULE_MS,
  channelPayloadRetryScheduleMs: [2_000, 10_000, 60_000],
  secureCookies: false,
  consoleDir: undefined,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 72_000,
  idleTimeoutMs: 120_000,
  trustedProxies: false,
  requestLogDays: 7,
  filesDir: undefined,
  eventStreamKeepAliveMs: 15_000,
  ...overrides,
});
