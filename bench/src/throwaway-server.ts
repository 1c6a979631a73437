/**
 * What the single-purpose benchmarks (files, streams) share: a database of their own, made for the
 * run and dropped after it, and `convo-server serve` processes on it, started as production runs
 * them (no worker, no log, no drain).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { DEFAULT_POSTGRES_URL, REPO_DIR, postgresDatabaseUrl } from './options.js';

const BIN = join(REPO_DIR, 'apps', 'api', 'dist', 'bin.js');

/** The options of `parseArgs` that choose the database: `--db sqlite|postgres` and the Postgres admin URL. */
export const THROWAWAY_DATABASE_OPTIONS = {
  db: { type: 'string', default: 'sqlite' },
  'postgres-url': { type: 'string', default: DEFAULT_POSTGRES_URL },
} as const;

/** A new SQLite file in a temporary folder, or a new database on the Postgres of `adminUrl`. */
export async function throwawayDatabase(
  db: string,
  adminUrl: string,
  label: string,
): Promise<{ url: string; cleanup: () => Promise<void> }> {
  if (db === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), `convo-bench-${label}-`));
    return { url: `file:${join(dir, 'convo.db')}`, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `convo_bench_${label}_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${name}`);
  await admin.query(`create database ${name}`);
  await admin.end();
  return {
    url: postgresDatabaseUrl(adminUrl, name),
    cleanup: async () => {
      const again = new pg.Client({ connectionString: adminUrl });
      await again.connect();
      await again.query(`drop database if exists ${name} with (force)`);
      await again.end();
    },
  };
}

/** `convo-server serve` on `url` at `port`; resolves once it answers /healthz. */
export async function startServe(url: string, port: number, env: Record<string, string> = {}): Promise<ChildProcess> {
  const server = spawn(process.execPath, [BIN, 'serve'], {
    cwd: REPO_DIR,
    env: {
      ...process.env,
      DATABASE_URL: url,
      NODE_ENV: 'production',
      LOG_LEVEL: 'silent',
      CONVO_WORKER: 'false',
      CONVO_DRAIN_SECONDS: '0',
      CONVO_SECRET_KEY: '0'.repeat(64),
      PORT: String(port),
      HOST: '127.0.0.1',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let tries = 0; ; tries++) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return server;
    if (tries > 300 || server.exitCode !== null) throw new Error(`the server on ${port} did not start`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Stops a server as its operator would (SIGTERM) and waits for it to exit. */
export async function stopServe(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null) return;
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
}
