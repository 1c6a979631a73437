import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { accessSync, chownSync, constants, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { type AddressInfo, createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { API_DIR, BIN } from '../testing/built-bin.js';

/**
 * Real processes for the resilience suite: `convo-server serve`, redis-server and a throwaway
 * Postgres cluster. Everything started here is remembered, so `stopAll()` in afterAll kills it
 * even when a test failed half-way.
 */

const run = promisify(execFile);
const debug = (name: string, chunk: unknown) => {
  if (process.env.DEBUG_RESILIENCE) process.stderr.write(`[${name}] ${String(chunk)}`);
};

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A port nobody listens on right now: listen on 0, read it, close. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Polls `check` until it holds; a check that throws fails at once. Not vi.waitUntil: PgBouncer's global setup
 * (pgbouncer.ts) starts processes outside any test, where Vitest's API is not available.
 */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
  everyMs = 50,
): Promise<void> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------------------------------------
// Binaries

/** The path of an executable on PATH or in /usr/lib/postgresql/<newest>/bin, else undefined. */
export function findBinary(name: string): string | undefined {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  try {
    const versions = readdirSync('/usr/lib/postgresql')
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    dirs.push(...versions.map((v) => join('/usr/lib/postgresql', v, 'bin')));
  } catch {}
  for (const dir of dirs) {
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {}
  }
  return undefined;
}

/**
 * Whether all the binaries exist. Outside CI a missing one skips its tests with a warning;
 * under CI=true it fails the run (as testing/databases.ts does for Postgres).
 */
export function binariesAvailable(names: readonly string[], what: string): boolean {
  const missing = names.filter((name) => !findBinary(name));
  if (missing.length === 0) return true;
  const message = `${what} needs ${missing.join(', ')}, not found on PATH or in /usr/lib/postgresql/*/bin`;
  if (process.env.CI === 'true') throw new Error(`${message} (required under CI=true)`);
  console.warn(`${message}; its tests are skipped`);
  return false;
}

/**
 * Whether this machine can run a throwaway Postgres cluster: initdb, pg_ctl and postgres, and,
 * as root (initdb refuses root), a `postgres` user to run them as. Skips or fails like binariesAvailable.
 */
export function postgresClusterAvailable(what: string): boolean {
  if (!binariesAvailable(['initdb', 'pg_ctl', 'postgres'], what)) return false;
  if (process.getuid?.() !== 0) return true;
  try {
    execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
    return true;
  } catch {
    const message = `${what} runs as root, so it needs a "postgres" user to run initdb as, and there is none`;
    if (process.env.CI === 'true') throw new Error(`${message} (required under CI=true)`);
    console.warn(`${message}; its tests are skipped`);
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Every child process of the suite

const children = new Set<ChildProcess>();
const cleanups = new Set<() => Promise<void> | void>();

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Kills every process this module started and runs every registered cleanup. Safe to call twice. */
export async function stopAll(): Promise<void> {
  const exits = [...children].map(async (child) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await Promise.race([exited, sleep(5_000)]);
  });
  await Promise.all(exits);
  for (const cleanup of [...cleanups].reverse()) {
    cleanups.delete(cleanup);
    try {
      await cleanup();
    } catch (error) {
      console.warn(`resilience cleanup failed: ${String(error)}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// convo-server serve

/**
 * The command's bin, whose shebang (`/usr/bin/env -S node …`) execs node with NODE_FLAGS: the README's production line.
 */
export const BIN_SCRIPT = join(API_DIR, 'bin', 'convo-server.js');

/**
 * The node flags of the command's shebang (apps/api/bin/convo-server.js), which the README's
 * production lines pass too: the processes here run with the memory settings of production.
 */
export const NODE_FLAGS: readonly string[] = (readFileSync(BIN_SCRIPT, 'utf8').split('\n')[0] as string)
  .split(/\s+/)
  .filter((arg) => arg.startsWith('--'));

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  origin: string;
  /** Everything the process wrote to stderr so far. */
  stderr(): string;
  /** Resolves with the exit code or signal when the process ends. */
  exited: Promise<number | string>;
  running(): boolean;
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

/**
 * Starts `convo-server serve` on `port` (a free one by default) and waits until GET /healthz
 * answers 200: as `node NODE_FLAGS dist/bin.js serve`, or with `viaBin` as `bin/convo-server.js
 * serve` (node found on PATH, this test's node first), both run as the README says to in production.
 */
export async function startServer(
  env: Record<string, string | undefined>,
  name = 'server',
  options: { port?: number; viaBin?: boolean } = {},
): Promise<ServerProcess> {
  const port = options.port ?? (await freePort());
  const [command, args] = options.viaBin ? [BIN_SCRIPT, ['serve']] : [process.execPath, [...NODE_FLAGS, BIN, 'serve']];
  const path = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`;
  const child = track(
    spawn(command, args, {
      env: {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        CONVO_WORKER: 'false',
        HOST: '127.0.0.1',
        PATH: path,
        ...env,
        PORT: String(port),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
  );
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
    debug(`${name}:${port}`, chunk);
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  const origin = `http://127.0.0.1:${port}`;
  const server: ServerProcess = {
    child,
    port,
    origin,
    stderr: () => stderr,
    exited,
    running: () => child.exitCode === null && child.signalCode === null,
    async kill(signal = 'SIGKILL') {
      if (server.running()) child.kill(signal);
      return exited;
    },
  };
  await waitFor(
    async () => {
      if (!server.running()) throw new Error(`convo-server exited (${await exited}) before it was healthy:\n${stderr}`);
      try {
        return (await fetch(`${origin}/healthz`, { signal: AbortSignal.timeout(1_000) })).status === 200;
      } catch {
        return false;
      }
    },
    `convo-server on port ${port} to be healthy`,
    20_000,
    50,
  );
  return server;
}

// ---------------------------------------------------------------------------------------------
// convo-server worker, and the other commands

export interface WorkerProcess {
  child: ChildProcess;
  stderr(): string;
  exited: Promise<number | string>;
  running(): boolean;
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

/** Starts `convo-server worker` and waits until it says it runs. */
export async function startWorkerProcess(
  env: Record<string, string | undefined>,
  name = 'worker',
): Promise<WorkerProcess> {
  const child = track(
    spawn(process.execPath, [...NODE_FLAGS, BIN, 'worker'], {
      env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'silent', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
  );
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
    debug(name, chunk);
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  const worker: WorkerProcess = {
    child,
    stderr: () => stderr,
    exited,
    running: () => child.exitCode === null && child.signalCode === null,
    async kill(signal = 'SIGKILL') {
      if (worker.running()) child.kill(signal);
      return exited;
    },
  };
  await waitFor(
    async () => {
      if (!worker.running()) throw new Error(`convo-server worker exited (${await exited}) before it ran:\n${stderr}`);
      return stderr.includes('Convo worker');
    },
    `${name} to run`,
    20_000,
  );
  return worker;
}

/** Runs a `convo-server` command to its end; its stdout, or an error with its stderr. */
export async function convoServer(env: Record<string, string | undefined>, ...args: string[]): Promise<string> {
  try {
    const { stdout } = await run(process.execPath, [BIN, ...args], {
      env: { ...process.env, LOG_LEVEL: 'silent', ...env },
      timeout: 30_000,
    });
    return stdout;
  } catch (error) {
    throw new Error(
      `convo-server ${args.join(' ')} failed: ${String(error)}\n${(error as { stderr?: string }).stderr ?? ''}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// HAProxy

/** Debian installs it in /usr/sbin, which is not on every PATH. */
export const findHaproxy = (): string | undefined =>
  findBinary('haproxy') ?? (existsSync('/usr/sbin/haproxy') ? '/usr/sbin/haproxy' : undefined);

/**
 * Starts `haproxy -f config` in the foreground (the config reads its addresses from `env`); resolves once `probeUrl`
 * answers.
 */
export async function startHaproxy(
  config: string,
  env: Record<string, string>,
  probeUrl: string,
): Promise<{ kill(): Promise<void> }> {
  const child = track(
    spawn(findHaproxy() ?? 'haproxy', ['-db', '-f', config], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let output = '';
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on('data', (chunk) => {
      output += String(chunk);
      debug('haproxy', chunk);
    });
  }
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`haproxy exited with ${child.exitCode}:\n${output}`);
      try {
        return (await fetch(probeUrl, { signal: AbortSignal.timeout(1_000) })).status === 200;
      } catch {
        return false;
      }
    },
    'haproxy to forward requests',
    10_000,
  );
  return {
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP

export interface Answer {
  method: string;
  path: string;
  /** Milliseconds since the epoch when it was sent, and how long the answer took. */
  sentAt: number;
  ms: number;
  status: number | undefined;
  /** Parsed JSON body, when there was one that parsed. */
  body: any;
  text: string;
  headers: Headers | undefined;
  /** Set when no HTTP answer came (connection refused or reset, timeout). */
  error: string | undefined;
}

/** One request that never throws: a transport failure or a timeout is reported in `error`. */
export async function send(
  origin: string,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<Answer> {
  const sentAt = Date.now();
  const headers: Record<string, string> = {};
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  try {
    const response = await fetch(origin + path, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {}
    return {
      method,
      path,
      sentAt,
      ms: Date.now() - sentAt,
      status: response.status,
      body,
      text,
      headers: response.headers,
      error: undefined,
    };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return {
      method,
      path,
      sentAt,
      ms: Date.now() - sentAt,
      status: undefined,
      body: undefined,
      text: '',
      headers: undefined,
      error: `${String(error)}${cause ? ` (${cause})` : ''}`,
    };
  }
}

export const describeAnswer = (a: Answer) =>
  `${a.method} ${a.path} after ${a.ms} ms: ${a.error ?? `${a.status} ${a.text.slice(0, 300)}`}`;

// ---------------------------------------------------------------------------------------------
// redis-server

export interface RedisProcess {
  port: number;
  url: string;
  kill(): Promise<void>;
}

/** Our own redis-server on a free port, in memory only (never the machine's shared one). */
export async function startRedis(): Promise<RedisProcess> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'convo-redis-'));
  cleanups.add(() => rmSync(dir, { recursive: true, force: true }));
  const child = track(
    spawn(
      findBinary('redis-server') ?? 'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    ),
  );
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += String(chunk);
    debug(`redis:${port}`, chunk);
  });
  child.stderr?.on('data', (chunk) => {
    output += String(chunk);
    debug(`redis:${port}`, chunk);
  });
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}:\n${output}`);
      return (await redisPing(port)) === '+PONG';
    },
    `redis-server on port ${port}`,
    10_000,
  );
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Sends PING over a raw socket; resolves with the first reply line, or undefined. */
function redisPing(port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    const done = (value: string | undefined) => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(1_000, () => done(undefined));
    socket.once('error', () => done(undefined));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(String(data).trim()));
  });
}

// ---------------------------------------------------------------------------------------------
// A throwaway Postgres cluster

export interface PostgresCluster {
  port: number;
  /** `postgres://postgres@127.0.0.1:<port>/<database>` */
  url(database: string): string;
  start(): Promise<void>;
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Stops the cluster (if running) and deletes its directory. */
  destroy(): Promise<void>;
}

/**
 * initdb + pg_ctl start in a temporary directory, on a free port, with trust authentication.
 * initdb refuses to run as root, so as root the cluster belongs to the `postgres` user and the
 * tools run through runuser (or su).
 */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  const initdb = findBinary('initdb');
  const pgCtl = findBinary('pg_ctl');
  if (!initdb || !pgCtl) throw new Error('initdb and pg_ctl are required');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'convo-pg-'));
  const data = join(dir, 'data');
  const log = join(dir, 'postgres.log');

  const asRoot = process.getuid?.() === 0;
  let asUser = (command: string, args: string[]): [string, string[]] => [command, args];
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
    const runuser = findBinary('runuser') ?? (existsSync('/usr/sbin/runuser') ? '/usr/sbin/runuser' : undefined);
    asUser = runuser
      ? (command, args) => [runuser, ['-u', 'postgres', '--', command, ...args]]
      : (command, args) => [
          'su',
          [
            'postgres',
            '-s',
            '/bin/sh',
            '-c',
            [command, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' '),
          ],
        ];
  }
  const tool = async (command: string, args: string[], timeoutMs = 30_000) => {
    const [file, argv] = asUser(command, args);
    try {
      const { stdout, stderr } = await run(file, argv, { timeout: timeoutMs, env: { ...process.env, LC_ALL: 'C' } });
      debug(`pg:${port}`, stdout + stderr);
    } catch (error) {
      let logText = '';
      try {
        logText = readFileSync(log, 'utf8');
      } catch {}
      throw new Error(`${command} ${args.join(' ')} failed: ${String(error)}\n${logText}`);
    }
  };

  let destroyed = false;
  const postmasterPid = (): number | undefined => {
    try {
      const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  };
  const cluster: PostgresCluster = {
    port,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    // -l: pg_ctl must not hand our pipes to the postmaster, or the call would never finish.
    start: () =>
      tool(pgCtl, [
        '-D',
        data,
        '-l',
        log,
        '-w',
        '-t',
        '30',
        '-o',
        `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`,
        'start',
      ]),
    stop: (mode = 'fast') => tool(pgCtl, ['-D', data, '-w', '-t', '30', '-m', mode, 'stop']),
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      if (postmasterPid() !== undefined) {
        await cluster.stop('immediate').catch(() => {
          const pid = postmasterPid();
          if (pid) {
            try {
              process.kill(pid, 'SIGKILL');
            } catch {}
          }
        });
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  cleanups.add(() => cluster.destroy());

  await tool(initdb, ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '--encoding=UTF8', '--locale=C']);
  await cluster.start();
  return cluster;
}
