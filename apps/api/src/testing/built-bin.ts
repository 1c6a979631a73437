import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const API_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The built operator command, as operators run it. */
export const BIN = join(API_DIR, 'dist', 'bin.js');

/** Newest modification time of the non-test sources under `dir`. */
function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts'))
      newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** Builds the command when it is missing or older than its sources (the test pipeline builds it first). */
export function ensureBuilt(): void {
  let built = 0;
  try {
    built = statSync(BIN).mtimeMs;
  } catch {}
  if (built === 0 || built < newestSource(join(API_DIR, 'src'))) {
    execFileSync(join(API_DIR, 'node_modules', '.bin', 'tsup'), [], { cwd: API_DIR, stdio: 'pipe' });
  }
}

/**
 * A `convo-server worker` process on `databaseUrl` for the crash tests: a short lease, so that a
 * killed worker's jobs come back soon; its stderr shown only with DEBUG_CRASH set.
 */
export function spawnWorker(databaseUrl: string, env: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, [BIN, 'worker'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      NODE_ENV: 'test',
      CONVO_WORKER_LEASE: '1500ms',
      LOG_LEVEL: 'silent',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.on('data', (d) => process.env.DEBUG_CRASH && process.stderr.write(`[worker] ${d}`));
  return child;
}
