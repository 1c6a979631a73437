import type { Convo } from '@convo/sdk';
import { type ConnectionFlags, configPath, readConfigFile, resolveSettings } from './config.js';
import { CliError } from './errors.js';
import type { Terminal } from './terminal.js';

/** The SDK client for a command; the SDK is loaded here, when a command runs, never at start-up. */
export async function openClient(flags: ConnectionFlags, terminal: Terminal): Promise<Convo> {
  const config = readConfigFile(configPath(terminal.env, terminal.platform, terminal.homeDir));
  const settings = resolveSettings(flags, terminal.env, config);
  if (!settings.apiKey) {
    throw new CliError('no API key: pass --api-key, set CONVO_API_KEY, or run `convo login`', 'auth');
  }
  const { Convo, DEFAULT_BASE_URL } = await import('@convo/sdk');
  return new Convo({ apiKey: settings.apiKey.value, baseUrl: settings.baseUrl?.value ?? DEFAULT_BASE_URL });
}
