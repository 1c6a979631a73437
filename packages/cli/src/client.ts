import type { Convo, RetryEvent } from '@convo/sdk';
import { type ConnectionFlags, configPath, readConfigFile, resolveSettings } from './config.js';
import { CliError, UsageError } from './errors.js';
import type { Terminal } from './terminal.js';

/**
 * The SDK client for a command; the SDK is loaded here, when a command runs, never at start-up. `notify` prints a
 * line for the person waiting (a command with a progress bar prints it above the bar); stderr by default.
 */
export async function openClient(
  flags: ConnectionFlags,
  terminal: Terminal,
  options: { notify?: (line: string) => void; onRetry?: (retry: RetryEvent) => void } = {},
): Promise<Convo> {
  const config = readConfigFile(configPath(terminal.env, terminal.platform, terminal.homeDir));
  const settings = resolveSettings(flags, terminal.env, config);
  if (!settings.apiKey) {
    throw new CliError('no API key: pass --api-key, set CONVO_API_KEY, or run `convo login`', 'auth');
  }
  if (settings.baseUrl) checkBaseUrl(settings.baseUrl.value, settings.baseUrl.source);
  const { Convo, DEFAULT_BASE_URL } = await import('@convo/sdk');
  const notice = rateLimitNotice(options.notify ?? ((line) => terminal.stderr.write(`${line}\n`)));
  return new Convo({
    apiKey: settings.apiKey.value,
    baseUrl: settings.baseUrl?.value ?? DEFAULT_BASE_URL,
    ...(terminal.sleep ? { sleep: terminal.sleep } : {}),
    onRetry: (retry) => {
      notice(retry);
      options.onRetry?.(retry);
    },
  });
}

/**
 * Says when a 429 is being waited out, which can take up to a minute, so that a bulk command does not look
 * stalled. Requests in flight together hit the limit together: one line per wait, not one per request.
 */
export function rateLimitNotice(notify: (line: string) => void, now: () => number = Date.now) {
  let quietUntil = 0;
  return (retry: RetryEvent): void => {
    if (retry.error.code !== 'rate_limited' || now() < quietUntil) return;
    quietUntil = now() + retry.delayMs;
    notify(
      `convo: rate limited; retrying in ${(retry.delayMs / 1000).toFixed(1)} s (attempt ${retry.attempt} of ${retry.maxAttempts})`,
    );
  };
}

const SOURCE_NAMES = { flag: '--base-url', env: 'CONVO_BASE_URL', profile: "the profile's base URL" } as const;

/** Every path is under /v1: a base URL without it would only ever get "No such path". */
export function checkBaseUrl(value: string, source: keyof typeof SOURCE_NAMES): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${SOURCE_NAMES[source]} is not a URL: "${value}" (expected e.g. https://api.example.com/v1)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`${SOURCE_NAMES[source]} must be an http(s) URL, got "${value}"`);
  }
  if (!/\/v1\/?$/.test(url.pathname)) {
    throw new UsageError(
      `${SOURCE_NAMES[source]} must end with /v1, the API's version: try ${value.replace(/\/+$/, '')}/v1`,
    );
  }
}
