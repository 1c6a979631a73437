import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { DEFAULT_TEST_POSTGRES_URL } from '../testing/databases.js';
import { findBinary, freePort, waitFor } from './processes.js';

/**
 * The PgBouncer project's global setup (vitest.resilience.config.ts): a pgbouncer of its own in
 * front of the test Postgres, pooling per transaction as deployments behind one do, so that the
 * HTTP suite's servers reach Postgres through it (through-pgbouncer.ts).
 */

declare module 'vitest' {
  export interface ProvidedContext {
    /** `postgres://127.0.0.1:<port>`: the suite's PgBouncer. */
    pgbouncerUrl: string;
  }
}

/** Debian installs it in /usr/sbin, which is not on every PATH. */
export const findPgBouncer = (): string | undefined =>
  findBinary('pgbouncer') ?? (existsSync('/usr/sbin/pgbouncer') ? '/usr/sbin/pgbouncer' : undefined);

export interface PgBouncer {
  /** `postgres://127.0.0.1:<port>`, without user or database. */
  url: string;
  stop(): Promise<void>;
}

/** Quotes a value for pgbouncer's auth_file. */
const quoted = (value: string) => `"${value.replaceAll('"', '""')}"`;

/** Starts pgbouncer on a free port in front of the server of `upstreamUrl`, and waits until it accepts connections. */
export async function startPgBouncer(upstreamUrl: string): Promise<PgBouncer> {
  const binary = findPgBouncer();
  if (!binary) throw new Error('pgbouncer is not installed (apt-get install pgbouncer)');
  const upstream = new URL(upstreamUrl);
  const user = decodeURIComponent(upstream.username) || 'postgres';
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'convo-pgbouncer-'));
  // With auth_type = trust clients are not asked for a password; pgbouncer logs in to Postgres
  // with the one in the auth file.
  writeFileSync(join(dir, 'users.txt'), `${quoted(user)} ${quoted(decodeURIComponent(upstream.password))}\n`);
  const version = /PgBouncer (\d+)\.(\d+)/.exec(execFileSync(binary, ['--version'], { encoding: 'utf8' }));
  const knowsPreparedStatements = version !== null && (Number(version[1]) > 1 || Number(version[2]) >= 21);
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${upstream.hostname.replace(/^\[|\]$/g, '')} port=${upstream.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      `admin_users = ${user}`,
      'pool_mode = transaction',
      'max_client_conn = 500',
      // pg sends the server's planner setting (database.ts) as the `options` startup parameter,
      // which PgBouncer cannot apply to the server connections its clients share: ignored here, as a
      // deployment behind PgBouncer sets it on the database or role instead (ALTER DATABASE … SET).
      'ignore_startup_parameters = options',
      // A PgBouncer that can keep named statements across server connections does not here: the
      // server must not need them.
      ...(knowsPreparedStatements ? ['max_prepared_statements = 0'] : []),
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'),
  );
  // pgbouncer refuses to run as root: it switches to the postgres user, which must read its folder.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    chownSync(
      dir,
      Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })),
      Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })),
    );
  }
  const child = spawn(binary, [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: unknown) => {
    output = (output + String(chunk)).slice(-20_000);
    if (process.env.DEBUG_RESILIENCE) process.stderr.write(`[pgbouncer:${port}] ${String(chunk)}`);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  // Should vitest exit without its teardown, pgbouncer must not outlive it.
  const killNow = () => {
    if (running()) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', killNow);
  const stop = async () => {
    process.removeListener('exit', killNow);
    if (running()) {
      child.kill('SIGTERM');
      const killed = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killed);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      async () => {
        if (!running())
          throw new Error(`pgbouncer exited (${child.exitCode ?? child.signalCode}) before it listened:\n${output}`);
        return accepts(port);
      },
      `pgbouncer on port ${port}`,
      10_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `postgres://127.0.0.1:${port}`, stop };
}

/** Whether something accepts TCP connections on this port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    const done = (value: boolean) => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => done(true));
  });
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (!findPgBouncer())
    throw new Error(
      'the HTTP suite through PgBouncer needs pgbouncer, not found on PATH or in /usr/sbin (required under CI=true)',
    );
  const bouncer = await startPgBouncer(process.env.TEST_DATABASE_URL || DEFAULT_TEST_POSTGRES_URL);
  project.provide('pgbouncerUrl', bouncer.url);
  return bouncer.stop;
}
