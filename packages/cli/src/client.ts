import type { Convo } from '@convo/sdk';
import { type ConnectionFlags, configPath, readConfigFile, resolveSettings } from './config.js';
import { CliError, UsageError } from './errors.js';
import type { Terminal } from './terminal.js';

/** The SDK client for a command; the SDK is loaded here, when a command runs, never at start-up. */
export async function openClient(flags: ConnectionFlags, terminal: Terminal): Promise<Convo> {
  const config = readConfigFile(configPath(terminal.env, terminal.platform, terminal.homeDir));
  const settings = resolveSettings(flags, terminal.env, config);
  if (!settings.apiKey) {
    throw new CliError('no API key: pass --api-key, set CONVO_API_KEY, or run `convo login`', 'auth');
  }
  if (settings.baseUrl) checkBaseUrl(settings.baseUrl.value, settings.baseUrl.source);
  const { Convo, DEFAULT_BASE_URL } = await import('@convo/sdk');
  return new Convo({ apiKey: settings.apiKey.value, baseUrl: settings.baseUrl?.value ?? DEFAULT_BASE_URL });
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
