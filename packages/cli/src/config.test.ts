import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configPath, keyPreview, readConfigFile, resolveSettings, writeConfigFile } from './config.js';
import { CliError } from './errors.js';

const file = {
  profiles: {
    default: { api_key: 'convo_sk_profile', base_url: 'http://profile/v1' },
    staging: { api_key: 'convo_sk_staging' },
  },
};

describe('settings precedence: flags, then environment, then profile', () => {
  it('takes flags first', () => {
    const settings = resolveSettings(
      { apiKey: 'convo_sk_flag', baseUrl: 'http://flag/v1' },
      { CONVO_API_KEY: 'convo_sk_env', CONVO_BASE_URL: 'http://env/v1' },
      file,
    );
    expect(settings.apiKey).toEqual({ value: 'convo_sk_flag', source: 'flag' });
    expect(settings.baseUrl).toEqual({ value: 'http://flag/v1', source: 'flag' });
  });

  it('then the environment', () => {
    const settings = resolveSettings({}, { CONVO_API_KEY: 'convo_sk_env', CONVO_BASE_URL: 'http://env/v1' }, file);
    expect(settings.apiKey).toEqual({ value: 'convo_sk_env', source: 'env' });
    expect(settings.baseUrl).toEqual({ value: 'http://env/v1', source: 'env' });
  });

  it('then the profile, each setting on its own', () => {
    const settings = resolveSettings({ apiKey: 'convo_sk_flag' }, {}, file);
    expect(settings.apiKey?.source).toBe('flag');
    expect(settings.baseUrl).toEqual({ value: 'http://profile/v1', source: 'profile' });
    expect(resolveSettings({}, {}, file).apiKey).toEqual({ value: 'convo_sk_profile', source: 'profile' });
  });

  it('picks the profile by flag, then CONVO_PROFILE, else default', () => {
    expect(resolveSettings({ profile: 'staging' }, { CONVO_PROFILE: 'default' }, file).apiKey?.value).toBe(
      'convo_sk_staging',
    );
    expect(resolveSettings({}, { CONVO_PROFILE: 'staging' }, file).apiKey?.value).toBe('convo_sk_staging');
    expect(resolveSettings({}, {}, file).profile).toBe('default');
    expect(resolveSettings({ profile: 'missing' }, {}, file).apiKey).toBeUndefined();
  });

  it('ignores empty values', () => {
    expect(resolveSettings({ apiKey: '' }, { CONVO_API_KEY: '' }, file).apiKey?.source).toBe('profile');
  });
});

describe('the config file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'convo-config-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('lives in the user config directory', () => {
    expect(configPath({ XDG_CONFIG_HOME: '/xdg' }, 'linux', '/home/ana')).toBe('/xdg/convo/config.json');
    expect(configPath({ HOME: '/home/bea' }, 'linux', '/home/ana')).toBe('/home/bea/.config/convo/config.json');
    expect(configPath({}, 'darwin', '/home/ana')).toBe('/home/ana/.config/convo/config.json');
    expect(configPath({ APPDATA: 'C:\\Users\\ana\\AppData\\Roaming' }, 'win32', 'C:\\Users\\ana')).toBe(
      join('C:\\Users\\ana\\AppData\\Roaming', 'convo', 'config.json'),
    );
  });

  it('is written with mode 0600, also over a file that was readable by others', () => {
    const path = join(dir, 'convo', 'config.json');
    writeConfigFile(path, file);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'convo')).mode & 0o777).toBe(0o700);
    expect(readConfigFile(path)).toEqual(file);

    chmodSync(path, 0o644);
    writeConfigFile(path, { profiles: {} });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ profiles: {} });
  });

  it('reads as empty when missing, and refuses invalid JSON', () => {
    expect(readConfigFile(join(dir, 'none.json'))).toEqual({ profiles: {} });
    writeFileSync(join(dir, 'bad.json'), '{');
    expect(() => readConfigFile(join(dir, 'bad.json'))).toThrow(CliError);
  });

  it('shows only the first 12 characters of a key', () => {
    expect(keyPreview('convo_sk_abcdefghijklmnop')).toBe('convo_sk_abc…');
  });
});
