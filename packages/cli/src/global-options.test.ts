import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from './errors.js';
import { loadOperationSpecs } from './operation-spec.js';
import { run } from './program.js';
import { testTerminal } from './test-terminal.js';

describe('global options', () => {
  let server: Server;
  let base = '';
  const seen: { path: string | undefined; authorization: string | undefined }[] = [];
  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      seen.push({ path: req.url, authorization: req.headers.authorization });
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ data: [], total: 0, limit: 20, offset: 0, has_more: false }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Run from source, a process's first command computes every operation's options from the
    // schemas (seconds under CI's load): done here, so that no test's own time pays for it.
    await loadOperationSpecs();
  }, 30_000);
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const lastRequest = () => seen.at(-1);

  it('are taken before the command as after it, the command’s own winning', async () => {
    const before = testTerminal();
    expect(
      await run(['--api-key', 'convo_sk_front', '--base-url', `${base}/v1`, '--json', 'tags', 'list'], before.terminal),
      before.stderr.text,
    ).toBe(0);
    expect(lastRequest()).toEqual({ path: '/v1/tags', authorization: 'Bearer convo_sk_front' });
    expect(JSON.parse(before.stdout.text)).toMatchObject({ data: [], total: 0 });

    const both = testTerminal();
    expect(
      await run(
        ['--api-key', 'convo_sk_front', '--base-url', `${base}/v1`, 'tags', 'list', '--api-key', 'convo_sk_back'],
        both.terminal,
      ),
    ).toBe(0);
    expect(lastRequest()?.authorization).toBe('Bearer convo_sk_back');
  });

  it('--profile before the command picks the profile saved by login', async () => {
    const configHome = mkdtempSync(join(tmpdir(), 'convo-config-'));
    mkdirSync(join(configHome, 'convo'));
    const profiles = {
      default: { api_key: 'convo_sk_default', base_url: `${base}/v1` },
      staging: { api_key: 'convo_sk_staging', base_url: `${base}/v1` },
    };
    writeFileSync(join(configHome, 'convo', 'config.json'), JSON.stringify({ profiles }));
    const { terminal, stderr } = testTerminal({ env: { XDG_CONFIG_HOME: configHome } });
    expect(await run(['--profile', 'staging', 'tags', 'list'], terminal), stderr.text).toBe(0);
    expect(lastRequest()?.authorization).toBe('Bearer convo_sk_staging');
  });

  it('a base URL without /v1 is a usage error that says what to add, before any request', async () => {
    const count = seen.length;
    for (const [argv, env, name] of [
      [['tags', 'list', '--base-url', base], {}, '--base-url'],
      [['tags', 'list'], { CONVO_BASE_URL: `${base}/` }, 'CONVO_BASE_URL'],
    ] as const) {
      const { terminal, stderr } = testTerminal({ env: { CONVO_API_KEY: 'convo_sk_test', ...env } });
      expect(await run([...argv], terminal)).toBe(EXIT_CODES.usage);
      expect(stderr.text).toBe(`convo: ${name} must end with /v1, the API's version: try ${base}/v1\n`);
    }
    expect(seen.length).toBe(count);
  });
});
