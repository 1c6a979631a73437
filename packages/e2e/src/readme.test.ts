import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from './server.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const BIN = join(root, 'apps/api/dist/bin.js');

/** The lines of the README's `sh` blocks, without their comments. */
const shellLines = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((block) =>
  (block[1] as string)
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter(Boolean),
);

describe("the top README's commands, as written", () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let port: number;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'convo-readme-'));
    port = await freePort();
    env = {
      ...process.env,
      DATABASE_URL: `file:${join(dir, 'convo.db')}`,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
    };
  });
  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('pins the pnpm of package.json wherever it runs pnpm through npx', () => {
    const pinned = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { packageManager: string })
      .packageManager;
    const uses = [...readme.matchAll(/npx -y (pnpm@[^\s`]+)/g)].map((match) => match[1]);
    expect(uses.length).toBeGreaterThan(0);
    for (const use of uses) expect(use).toBe(pinned);
  });

  it('runs every operator command of the README in order, the ids it prints filled in', async () => {
    const commands = shellLines
      .filter((line) => line.startsWith('pnpm -s convo-server '))
      .map((line) => line.slice('pnpm -s convo-server '.length));
    expect(commands.length).toBeGreaterThanOrEqual(9);
    const ids: Record<string, string> = {};
    let demoKey = '';
    let seedOutput = '';
    for (const command of commands) {
      const args = command
        .replace('acct_…', ids.account ?? 'acct_…')
        .replace('key_…', ids.key ?? 'key_…')
        .split(/\s+/);
      if (args[0] === 'serve' || args[0] === 'worker') {
        // Long-running: each starts, says so, and stops on SIGTERM.
        const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
        children.push(child);
        let stderr = '';
        child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        await vi.waitFor(
          () => expect(stderr, command).toMatch(args[0] === 'serve' ? /Convo API on / : /Convo worker .* running/),
          { timeout: 20_000 },
        );
        const exited = new Promise((done) => child.once('exit', done));
        child.kill('SIGTERM');
        expect(await exited, command).toBe(0);
        continue;
      }
      const { stdout } = await promisify(execFile)(process.execPath, [BIN, ...args], { env, maxBuffer: 10_000_000 });
      if (command.startsWith('accounts create')) ids.account = (JSON.parse(stdout) as { id: string }).id;
      if (command.startsWith('keys create')) ids.key = (JSON.parse(stdout) as { id: string }).id;
      if (command.startsWith('seed --demo')) {
        demoKey = /(convo_sk_\S+)/.exec(stdout)?.[1] ?? '';
        seedOutput = stdout;
      }
    }
    // What the README shows `start` printing is what it prints, this port and data directory aside.
    const shown = /```text\n(Created demo account[\s\S]*?)```/.exec(readme)?.[1];
    expect(shown, 'the README shows what `start` prints').toBeDefined();
    const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const pattern = (shown as string)
      .replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`)
      .replace('data/demo-api-key', join(dir, 'demo-api-key'))
      .split('…')
      .map(literal)
      .join('\\S+');
    expect(seedOutput).toMatch(new RegExp(`^${pattern}$`));
    expect(seedOutput).toContain(`CONVO_BASE_URL=http://127.0.0.1:${port}/v1\n`);
    expect(ids.account).toMatch(/^acct_/);
    expect(ids.key).toMatch(/^key_/);

    // The curl line, with the key `seed --demo` printed, against a served instance.
    const curl = shellLines.find((line) => line.startsWith('curl '));
    expect(curl).toBeDefined();
    const child = spawn(process.execPath, [BIN, 'serve'], { env, stdio: 'ignore' });
    children.push(child);
    await vi.waitFor(
      async () => expect((await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok).toBe(true),
      { timeout: 20_000 },
    );
    const line = (curl as string).replace('<printed key>', demoKey).replace('localhost:3000', `127.0.0.1:${port}`);
    const { stdout } = await promisify(execFile)('sh', ['-c', `${line} --silent --fail`]);
    expect((JSON.parse(stdout) as { total: number }).total).toBeGreaterThan(0);
  }, 120_000);
});
