import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildServer, defaultSettings, migrateToLatest, openDatabase, seedDemo } from '@convo/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './server.js';

const run = promisify(execFile);
const E2E_DIR = fileURLToPath(new URL('..', import.meta.url));
const PYTHON_SDK = fileURLToPath(new URL('../../sdk-python', import.meta.url));
const CLI_BIN = fileURLToPath(new URL('../../cli/bin/convo.js', import.meta.url));

/**
 * The quickstart at the top of the served OpenAPI document (what /docs shows first), run as a newcomer copies it:
 * against a server whose public URL is its own address, with the demo account's key in CONVO_API_KEY.
 */
describe('the quickstart of /v1/openapi.json', () => {
  let origin: string;
  let key: string;
  let blocks: { lang: string; code: string }[];
  let close: () => Promise<void>;
  let scratch: string;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'convo-quickstart-'));
    const database = openDatabase(`file:${join(dir, 'convo.db')}`);
    await migrateToLatest(database.db);
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    const app = await buildServer({ database, logger: false, settings: defaultSettings(), publicUrl: origin });
    await app.listen({ port, host: '127.0.0.1' });
    key = (await seedDemo(database)).key.key;
    // Inside the e2e package, so that the TypeScript block's `@convo/sdk` resolves as in a project that installed it.
    scratch = mkdtempSync(join(E2E_DIR, '.quickstart-'));
    close = async () => {
      await app.close();
      await database.destroy();
      rmSync(dir, { recursive: true, force: true });
      rmSync(scratch, { recursive: true, force: true });
    };
    const document = (await (await fetch(`${origin}/v1/openapi.json`)).json()) as { info: { description: string } };
    blocks = [...document.info.description.matchAll(/```(\w+)\n([\s\S]*?)\n```/g)].map((m) => ({
      lang: m[1] as string,
      code: m[2] as string,
    }));
  });
  afterAll(() => close?.());

  const env = () => ({ PATH: process.env.PATH ?? '', HOME: scratch, CONVO_API_KEY: key });
  const block = (lang: string, has: string) => {
    const found = blocks.find((b) => b.lang === lang && b.code.includes(has));
    if (!found) throw new Error(`no ${lang} block with "${has}" in the quickstart`);
    return found.code;
  };
  let firstId: string;

  it('names the serving server as the base URL and the key in the environment', () => {
    expect(block('sh', 'export CONVO_BASE_URL')).toContain(`CONVO_BASE_URL=${origin}/v1`);
  });

  it('lists the active conversations with curl', async () => {
    const { stdout } = await run('sh', ['-c', `${block('sh', 'curl ')} --silent --fail-with-body`], { env: env() });
    const page = JSON.parse(stdout) as { data: { id: string; status: string }[] };
    expect(page.data.length).toBeGreaterThan(0);
    expect(page.data.every((c) => c.status === 'active')).toBe(true);
    firstId = page.data[0]?.id as string;
  });

  it('does the same with the TypeScript SDK', async () => {
    const file = join(scratch, 'first-call.mjs');
    writeFileSync(file, block('js', 'new Convo'));
    const { stdout } = await run(process.execPath, [file], { env: env() });
    expect(stdout.split('\n')[0]).toMatch(new RegExp(`^${firstId} `));
  });

  it('does the same with the Python library', async () => {
    const { stdout } = await run('python3', ['-c', block('python', 'convo.Client')], {
      env: { ...env(), PYTHONPATH: PYTHON_SDK },
    });
    expect(stdout.split('\n')[0]).toMatch(new RegExp(`^${firstId} `));
  });

  it('does the same with the CLI', async () => {
    const command = block('sh', 'convo conversations').replace(/^convo /, `"${process.execPath}" "${CLI_BIN}" `);
    const { stdout } = await run('sh', ['-c', command], { env: env() });
    expect(stdout).toContain(firstId);
  });
});
