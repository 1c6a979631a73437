/**
 * Behaviour the operator can switch, as the server and worker receive it (env.ts reads it from
 * the environment; tests build it directly).
 */
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
}

/** 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (CONTRACT: Events and webhooks). */
export const WEBHOOK_RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000] as const;

export const defaultSettings = (overrides: Partial<Settings> = {}): Settings => ({
  allowPrivateWebhooks: false,
  sandboxEnabled: false,
  webhookRetryScheduleMs: WEBHOOK_RETRY_SCHEDULE_MS,
  webhookTimeoutMs: 15_000,
  authFailuresPerMinute: 30,
  ...overrides,
});
