import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { DEMO_KEY_FILE } from './operator/demo-key-file.js';
import { API_DIR, BIN, ensureBuilt } from './testing/built-bin.js';

const FLAGS = ['--max-semi-space-size=8', '--heap-growing-percent=50', '--no-allocation-site-pretenuring'];

/** The server's Node flags (README, "Memory and garbage collection"; bench/README.md says why). */
describe('how the server is launched', () => {
  it('uses flags this Node accepts (an unknown V8 flag stops node before the server starts)', () => {
    const run = spawnSync(
      process.execPath,
      [
        ...FLAGS,
        '-e',
        "process.stdout.write(require('node:v8').getHeapStatistics().total_heap_size > 0 ? 'ok' : 'no')",
      ],
      { encoding: 'utf8' },
    );
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toBe('ok');
  });

  it('starts the built convo-server command with them, through its own shebang', () => {
    ensureBuilt();
    // A preloaded script reports the flags the process was started with, and stops it there.
    const dir = mkdtempSync(join(tmpdir(), 'convo-launch-'));
    const report = join(dir, 'report.cjs');
    writeFileSync(report, 'process.stdout.write(JSON.stringify(process.execArgv)); process.exit(0);');
    const run = spawnSync(BIN, ['--help'], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: `--require=${report}` },
    });
    rmSync(dir, { recursive: true, force: true });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(expect.arrayContaining(FLAGS));
  });
});

const ROOT = resolve(API_DIR, '../..');

/** A port nothing listens on now: bound, read and released. */
const freePort = () =>
  new Promise<number>((done) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => done(port));
    });
  });

/**
 * `pnpm start` as package.json writes it, after its build step (the test pipeline builds first): the
 * seeding and the server in one shell, in a process group of its own so that stopping it stops both.
 */
function start(env: NodeJS.ProcessEnv): { child: ChildProcess; stdout: () => string; stderr: () => string } {
  const script = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } })
    .scripts.start;
  const [build, ...rest] = script.split(' && ');
  expect(build).toMatch(/^turbo run build /);
  expect(rest.every((command) => command.startsWith('node '))).toBe(true);
  const child = spawn('sh', ['-c', rest.join(' && ')], {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return { child, stdout: () => stdout, stderr: () => stderr };
}

describe('pnpm start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'convo-start-'));
  const running = new Set<ChildProcess>();
  afterAll(() => {
    for (const child of running) if (child.pid) process.kill(-child.pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints the same demo key at each start, kept beside the database for its owner only, with the base URL', async () => {
    ensureBuilt();
    const port = await freePort();
    const env = {
      ...process.env,
      DATABASE_URL: `file:${join(dir, 'convo.db')}`,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
    };
    const base = `http://127.0.0.1:${port}/v1`;
    const keyFile = join(dir, DEMO_KEY_FILE);
    const conversations = (key: string) =>
      fetch(`${base}/conversations?limit=1`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);

    /** Starts, waits until it serves, and returns the key it printed. */
    const started = async () => {
      const run = start(env);
      running.add(run.child);
      await vi.waitFor(
        () => {
          if (run.child.exitCode !== null) throw new Error(`start exited with ${run.child.exitCode}: ${run.stderr()}`);
          expect(run.stderr()).toMatch(/Convo API on /);
        },
        { timeout: 30_000, interval: 50 },
      );
      const key = /API key \(full access\): (convo_sk_\S+)/.exec(run.stdout())?.[1];
      expect(key, run.stdout()).toBeDefined();
      return { ...run, key: key as string };
    };
    const stopped = async (run: { child: ChildProcess }) => {
      const exited = new Promise((done) => run.child.once('exit', done));
      process.kill(-(run.child.pid as number), 'SIGTERM');
      await exited;
      running.delete(run.child);
    };

    const first = await started();
    // Not port 3000, the CLI's and the SDKs' default: the line to give them says where the server is.
    expect(first.stdout()).toContain(`export CONVO_API_KEY=${first.key} CONVO_BASE_URL=${base}\n`);
    expect(await conversations(first.key)).toBe(200);
    expect(readFileSync(keyFile, 'utf8')).toBe(`${first.key}\n`);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    await stopped(first);

    const second = await started();
    expect(second.key).toBe(first.key);
    expect(second.stdout()).toContain('The same as before');
    expect(await conversations(first.key)).toBe(200);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    await stopped(second);

    // Without the file, a new key, and the one nobody keeps any more stops working.
    rmSync(keyFile);
    const third = await started();
    expect(third.key).not.toBe(first.key);
    expect(await conversations(third.key)).toBe(200);
    expect(await conversations(first.key)).toBe(401);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    await stopped(third);
  }, 120_000);
});
