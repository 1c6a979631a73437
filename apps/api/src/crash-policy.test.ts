import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { API_DIR, BIN, ensureBuilt } from './testing/built-bin.js';

/** The built library, as a child process imports it. */
const BUILT = pathToFileURL(join(API_DIR, 'dist', 'index.js')).href;

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  stdout: string;
}

/** Runs `script` (an ES module) in a child node process and waits for it to end. */
function runChild(script: string, onStdout?: (text: string, child: ReturnType<typeof spawn>) => void): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: API_DIR,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
      onStdout?.(stdout, child);
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stderr, stdout }));
  });
}

/** The crash line: the last JSON line on stderr. */
const crashLine = (stderr: string) => {
  const lines = stderr
    .trim()
    .split('\n')
    .filter((line) => line.startsWith('{'));
  expect(lines.length, stderr).toBeGreaterThan(0);
  return JSON.parse(lines[lines.length - 1] as string) as {
    level: string;
    kind: string;
    role: string;
    requestId?: string;
    err: { message: string };
  };
};

/**
 * Runs the built `convo-server <command>` with a module loaded first that throws once a handler
 * for uncaught exceptions is installed: the command's own policy must log it and exit non-zero.
 */
function runCommandThatCrashes(command: 'serve' | 'worker'): Promise<Ended> {
  const dir = mkdtempSync(join(tmpdir(), 'convo-crash-'));
  const preload = join(dir, 'throw-once-installed.mjs');
  writeFileSync(
    preload,
    `const timer = setInterval(() => {
      if (process.listenerCount('uncaughtException') === 0) return;
      clearInterval(timer);
      throw new Error('thrown inside ${command}');
    }, 20);`,
  );
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', pathToFileURL(preload).href, BIN, command], {
      cwd: dir,
      env: {
        ...process.env,
        DATABASE_URL: `file:${join(dir, 'convo.db')}`,
        PORT: '0',
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        CONVO_WORKER: 'false',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, signal, stderr, stdout });
    });
  });
}

describe('the crash policy', () => {
  beforeAll(() => ensureBuilt(), 120_000);

  it.each(['serve', 'worker'] as const)(
    '`convo-server %s` installs it: an uncaught exception is logged and ends it non-zero',
    async (command) => {
      const ended = await runCommandThatCrashes(command);
      expect(ended.code, ended.stderr).toBe(1);
      expect(crashLine(ended.stderr)).toMatchObject({
        level: 'fatal',
        kind: 'uncaughtException',
        role: command,
        err: { message: `thrown inside ${command}` },
      });
    },
  );

  it('an uncaught exception is logged and ends the process non-zero', async () => {
    const ended = await runChild(`
      import { installCrashPolicy } from ${JSON.stringify(BUILT)};
      installCrashPolicy('serve');
      // The crash under test, and a timer that prints only if the process outlives it.
      setTimeout(() => { throw new Error('boom from a timer'); }, 1);
      setTimeout(() => console.log('still running'), 5_000);
    `);
    expect(ended.code).toBe(1);
    expect(ended.stdout).not.toContain('still running');
    const line = crashLine(ended.stderr);
    expect(line).toMatchObject({
      level: 'fatal',
      kind: 'uncaughtException',
      role: 'serve',
      err: { message: 'boom from a timer' },
    });
    expect(line.requestId).toBeUndefined();
  });

  it('an unhandled rejection is logged and ends the process non-zero', async () => {
    const ended = await runChild(`
      import { installCrashPolicy } from ${JSON.stringify(BUILT)};
      installCrashPolicy('worker');
      Promise.reject(new Error('nobody awaited this'));
      // Keeps the process alive unless the rejection ends it.
      setTimeout(() => console.log('still running'), 5_000);
    `);
    expect(ended.code).toBe(1);
    expect(crashLine(ended.stderr)).toMatchObject({
      kind: 'unhandledRejection',
      role: 'worker',
      err: { message: 'nobody awaited this' },
    });
  });

  it('an error that escapes while a request is served is logged with its request id', async () => {
    // A real server whose one extra route throws outside its promise chain, as a stream's unheard error would.
    let requested = false;
    const ended = await runChild(
      `
      import { buildServer, openDatabase, migrateToLatest, installCrashPolicy } from ${JSON.stringify(BUILT)};
      installCrashPolicy('serve');
      const database = openDatabase('file::memory:');
      await migrateToLatest(database.db);
      const app = await buildServer({ database, logger: false });
      app.get('/escape', async () => {
        setImmediate(() => { throw new Error('escaped the request'); });
        return new Promise(() => {});
      });
      await app.listen({ port: 0, host: '127.0.0.1' });
      console.log('listening ' + app.server.address().port);
    `,
      (stdout) => {
        const port = /listening (\d+)/.exec(stdout)?.[1];
        if (port && !requested) {
          requested = true;
          fetch(`http://127.0.0.1:${port}/escape`, { headers: { 'x-request-id': 'req_crash_test' } }).catch(() => {});
        }
      },
    );
    expect(ended.code).toBe(1);
    expect(crashLine(ended.stderr)).toMatchObject({
      kind: 'uncaughtException',
      requestId: 'req_crash_test',
      err: { message: 'escaped the request' },
    });
  });
});
