import { type Command, Option } from 'commander';
import { openClient } from '../../client.js';
import { DEFAULT_PROFILE, configPath, keyPreview, readConfigFile, writeConfigFile } from '../../config.js';
import { UsageError } from '../../errors.js';
import { type CommandContext, readAll } from '../../operation-commands.js';
import { formatJson, outputFormatOf } from '../../output.js';
import { type Terminal, writeOut } from '../../terminal.js';
import { promptSecret } from './secret-prompt.js';

interface LoginOptions {
  apiKey?: string;
  baseUrl?: string;
  profile?: string;
  verify: boolean;
  json?: boolean;
}

/** `convo login` and `convo logout`: the profiles of the config file. */
export function addAuthCommands(program: Command, context: CommandContext): void {
  const { terminal } = context;

  program
    .command('login')
    .summary('Save an API key (and base URL) as a profile')
    .description(
      [
        'Save an API key (and base URL) as a profile, so later commands need no flags or environment.',
        'The key is asked for without echo on a terminal, read from stdin when it is piped, or given with --api-key. It is checked with one read request first (skip with --no-verify), then written to the config file ($XDG_CONFIG_HOME/convo/config.json, else ~/.config/convo/config.json; %APPDATA%\\convo\\config.json on Windows), readable by you only (mode 0600). Flags and CONVO_API_KEY / CONVO_BASE_URL still take precedence over the profile.',
        'Example: convo login --base-url https://api.example.com/v1',
      ].join('\n\n'),
    )
    .option('--api-key <key>', 'the key (else asked for, or read from stdin)')
    .option('--base-url <url>', 'API base URL ending in /v1, saved with the key')
    .option('--profile <name>', `profile name (default: "${DEFAULT_PROFILE}")`)
    .option('--no-verify', 'save without checking the key against the API')
    .addOption(new Option('--json', 'print the result as JSON'))
    .action(async (options: LoginOptions) => login(options, terminal));

  program
    .command('logout')
    .summary('Remove a saved profile')
    .description('Remove a saved profile (its API key and base URL) from the config file.')
    .option('--profile <name>', `profile name (default: "${DEFAULT_PROFILE}")`)
    .addOption(new Option('--json', 'print the result as JSON'))
    .action(async (options: { profile?: string; json?: boolean }) => logout(options, terminal));
}

async function login(options: LoginOptions, terminal: Terminal): Promise<void> {
  const profile = options.profile || DEFAULT_PROFILE;
  let apiKey = options.apiKey;
  if (apiKey === undefined) {
    apiKey = terminal.stdin.isTTY
      ? await promptSecret('API key: ', terminal.stdin, terminal.stderr)
      : (await readAll(terminal.stdin)).split(/\r?\n/)[0];
  }
  apiKey = apiKey?.trim();
  if (!apiKey) throw new UsageError('no API key given: type it at the prompt, pipe it to stdin, or pass --api-key');

  if (options.verify) {
    const client = await openClient({ apiKey, baseUrl: options.baseUrl, profile }, terminal);
    await client.tags.list({ limit: 1 });
  }

  const path = configPath(terminal.env, terminal.platform, terminal.homeDir);
  const config = readConfigFile(path);
  const baseUrl = options.baseUrl ?? config.profiles[profile]?.base_url;
  config.profiles[profile] = { api_key: apiKey, ...(baseUrl ? { base_url: baseUrl } : {}) };
  writeConfigFile(path, config);

  if (outputFormatOf(options, terminal.stdout) === 'json') {
    await writeOut(terminal.stdout, formatJson({ profile, key: keyPreview(apiKey), base_url: baseUrl ?? null, path }));
  } else {
    await writeOut(
      terminal.stdout,
      `Logged in: profile "${profile}" with key ${keyPreview(apiKey)}${baseUrl ? ` for ${baseUrl}` : ''}, saved to ${path}\n`,
    );
  }
}

async function logout(options: { profile?: string; json?: boolean }, terminal: Terminal): Promise<void> {
  const profile = options.profile || DEFAULT_PROFILE;
  const path = configPath(terminal.env, terminal.platform, terminal.homeDir);
  const config = readConfigFile(path);
  const existed = profile in config.profiles;
  if (existed) {
    delete config.profiles[profile];
    writeConfigFile(path, config);
  }
  if (outputFormatOf(options, terminal.stdout) === 'json')
    await writeOut(terminal.stdout, formatJson({ profile, removed: existed, path }));
  else
    await writeOut(
      terminal.stdout,
      existed
        ? `Logged out: removed profile "${profile}" from ${path}\n`
        : `No profile "${profile}" in ${path}: nothing to remove.\n`,
    );
}
