import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CliError } from './errors.js';

/**
 * Where the API key and base URL come from: `--api-key`/`--base-url`, else CONVO_API_KEY /
 * CONVO_BASE_URL, else the profile saved by `convo login` (`--profile`, CONVO_PROFILE, else
 * `default`). Each setting is looked up on its own, in that order.
 */
export interface ConnectionFlags {
  apiKey?: string | undefined;
  baseUrl?: string | undefined;
  profile?: string | undefined;
}

export type Environment = Record<string, string | undefined>;

export interface Profile {
  api_key: string;
  base_url?: string;
}

export interface ConfigFile {
  profiles: Record<string, Profile>;
}

export type SettingSource = 'flag' | 'env' | 'profile';

export interface ResolvedSettings {
  profile: string;
  apiKey: { value: string; source: SettingSource } | undefined;
  baseUrl: { value: string; source: SettingSource } | undefined;
}

export const DEFAULT_PROFILE = 'default';

/**
 * `%APPDATA%\convo\config.json` on Windows, else `$XDG_CONFIG_HOME/convo/config.json`, else
 * `~/.config/convo/config.json`.
 */
export function configPath(env: Environment, platform: NodeJS.Platform, homeDir: string): string {
  if (platform === 'win32' && env.APPDATA) return join(env.APPDATA, 'convo', 'config.json');
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homeDir, '.config');
  return join(base, 'convo', 'config.json');
}

/** The config file, or an empty one when there is none. */
export function readConfigFile(path: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { profiles: {} };
    throw new CliError(`cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text) as Partial<ConfigFile>;
    return { profiles: typeof parsed.profiles === 'object' && parsed.profiles !== null ? parsed.profiles : {} };
  } catch {
    throw new CliError(`${path} is not valid JSON: fix it or remove it and run convo login again`);
  }
}

/** Writes the file readable by its owner only (0600, in a 0700 directory), replacing it whole. */
export function writeConfigFile(path: string, config: ConfigFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  // `mode` applies only when the file is created, and is subject to the umask.
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}

export function resolveSettings(flags: ConnectionFlags, env: Environment, config: ConfigFile): ResolvedSettings {
  const profileName = flags.profile || env.CONVO_PROFILE || DEFAULT_PROFILE;
  const profile = config.profiles[profileName];
  const pick = (flag: string | undefined, fromEnv: string | undefined, fromProfile: string | undefined) =>
    flag
      ? { value: flag, source: 'flag' as const }
      : fromEnv
        ? { value: fromEnv, source: 'env' as const }
        : fromProfile
          ? { value: fromProfile, source: 'profile' as const }
          : undefined;
  return {
    profile: profileName,
    apiKey: pick(flags.apiKey, env.CONVO_API_KEY, profile?.api_key),
    baseUrl: pick(flags.baseUrl, env.CONVO_BASE_URL, profile?.base_url),
  };
}

/** Enough of a key to recognise it, never enough to use it. */
export const keyPreview = (key: string): string => `${key.slice(0, 12)}…`;
