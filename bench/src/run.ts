/**
 * The benchmark: for each database, the cached (or new) data set, a copy for the real server and
 * an index-less copy for the reference server, both servers as child processes, a check that they
 * answer the same, then each scenario with autocannon (its own process): `--runs` measured runs
 * of `--duration` seconds at `--connections`, each after its own warm-up, alternating real and
 * reference so that a noisy machine hits both alike. Reports medians, the ratio to the
 * reference and the targets, in bench/results/ as JSON and Markdown.
 *
 *   pnpm bench [-- --db sqlite|postgres|both --scale 200k|1m --duration 10 --runs 3 --connections 32]
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { prepareRunDatabases } from './copies.js';
import { cpuSpeed } from './calibrate.js';
import { type ProfileSummary, renderProfile, summarizeProfile } from './cpu-profile.js';
import { type Dataset, ensureDataset } from './generate.js';
import type { LoadConfig } from './load.js';
import {
  type BenchOptions,
  BENCH_DIR,
  DATA_DIR,
  type Dialect,
  REPO_DIR,
  RESULTS_DIR,
  parseOptions,
} from './options.js';
import { RSS_LIMIT_MB, type Scenario, type TargetCheck, buildScenarios, checkTarget } from './scenarios.js';

const API_BIN = join(REPO_DIR, 'apps/api/dist/bin.js');
/** The server runs as `pnpm start` and the `convo-server` command run it (README, "Memory"). */
const SERVER_NODE_FLAGS = ['--max-semi-space-size=8', '--heap-growing-percent=50', '--no-allocation-site-pretenuring'];
const LOAD_SCRIPT = join(BENCH_DIR, 'src/load.ts');
const REFERENCE_SCRIPT = join(BENCH_DIR, 'src/reference-server.ts');
const CLOCK_TICKS = 100;

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Processes

interface ServerProcess {
  role: 'real' | 'reference';
  child: ChildProcess;
  pid: number;
  baseUrl: string;
  logPath: string;
  /** Postgres: the server's database, which waitIdle also waits for. */
  postgresUrl?: string;
  /** How it was started (restartServer starts it again so). */
  start: { args: string[]; env: Record<string, string>; port: number };
}

const children = new Set<ChildProcess>();

function spawnServer(
  role: ServerProcess['role'],
  { args, env, port }: ServerProcess['start'],
  logPath: string,
): ChildProcess & { pid: number } {
  const out = createWriteStream(logPath, { flags: 'a' });
  const child = spawn(process.execPath, args, {
    cwd: role === 'real' ? REPO_DIR : BENCH_DIR,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  children.add(child);
  child.once('exit', () => children.delete(child));
  if (child.pid === undefined) throw new Error(`could not start the ${role} server`);
  return child as ChildProcess & { pid: number };
}

function startServer(
  role: ServerProcess['role'],
  args: string[],
  env: Record<string, string>,
  port: number,
  logDir: string,
): ServerProcess {
  const start = { args, env, port };
  const logPath = join(logDir, `${role}.log`);
  const child = spawnServer(role, start, logPath);
  return { role, child, pid: child.pid, baseUrl: `http://127.0.0.1:${port}`, logPath, start };
}

/**
 * Kills the server and starts it again on the same port, its database's running queries cancelled
 * first on Postgres (a killed client's backend runs its query on to the end).
 */
async function restartServer(server: ServerProcess): Promise<void> {
  const exited = exitOf(server);
  server.child.kill('SIGKILL');
  await exited;
  if (server.postgresUrl) {
    const client = new pg.Client({ connectionString: server.postgresUrl });
    await client.connect();
    try {
      await client.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
      );
    } finally {
      await client.end();
    }
  }
  const child = spawnServer(server.role, server.start, server.logPath);
  server.child = child;
  server.pid = child.pid;
}

/** Resolves when the server's process has exited (at once if it has). */
const exitOf = ({ child }: ServerProcess) =>
  new Promise<void>((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve()),
  );

async function stopServer(server: ServerProcess): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = exitOf(server);
  server.child.kill('SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

function killChildren() {
  for (const child of children) child.kill('SIGKILL');
}
process.once('exit', killChildren);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killChildren();
    process.exit(130);
  });
}

/** Waits until /healthz answers quickly: the server is up, and done with whatever a run left queued. */
async function waitIdle(server: ServerProcess, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server.child.exitCode !== null)
      throw new Error(
        `the ${server.role} server exited (${server.child.exitCode}); see ${server.logPath}:\n${tail(server.logPath)}`,
      );
    const started = Date.now();
    try {
      const response = await fetch(`${server.baseUrl}/healthz`, { signal: AbortSignal.timeout(5000) });
      await response.arrayBuffer();
      if (
        response.ok &&
        Date.now() - started < 100 &&
        (!server.postgresUrl || (await postgresQuiet(server.postgresUrl)))
      )
        return;
    } catch {
      // not up yet
    }
    await sleep(200);
  }
  throw new Error(`the ${server.role} server did not become idle within ${timeoutMs / 1000} s; see ${server.logPath}`);
}

/**
 * How long the reference server may take to work through what a run left queued before it is
 * restarted instead: at 1M conversations its searches and lists take seconds each (tens of seconds
 * on SQLite, one at a time), and the 32 a run leaves queued held the harness for up to ten minutes
 * a run, most of an hour per database. What it completed within the run is measured either way.
 */
const REFERENCE_DRAIN_MS = 20_000;

/** Waits until the server is idle (waitIdle); the reference is restarted when its queue outlasts REFERENCE_DRAIN_MS. */
async function settle(server: ServerProcess): Promise<void> {
  if (server.role === 'real') return waitIdle(server);
  try {
    await waitIdle(server, REFERENCE_DRAIN_MS);
  } catch (error) {
    if (server.child.exitCode !== null) throw error;
    log(`  reference still busy after ${REFERENCE_DRAIN_MS / 1000} s: restarted`);
    await restartServer(server);
    await waitIdle(server);
  }
}

/**
 * Whether no query is running in this Postgres database (but this one). A server answers
 * /healthz from its event loop while its queries still run in Postgres: the reference's list and
 * search queries (seconds each, 32 at a time) outlived the load that sent them and ran on into the
 * next measured run of the real server, which then shared the machine with them.
 */
async function postgresQuiet(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and state = 'active' and pid <> pg_backend_pid()",
    );
    return rows[0]?.n === 0;
  } finally {
    await client.end();
  }
}

const tail = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8').split('\n').slice(-20).join('\n') : '');

// ---------------------------------------------------------------------------------------------
// /proc sampling

const readRssKb = (pid: number, field: 'VmRSS' | 'VmHWM'): number => {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
};

/** utime + stime of a process, in clock ticks. */
const processTicks = (pid: number): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
};

/**
 * utime + stime of each of the Postgres server's processes (its backends, WAL writer,
 * checkpointer…), in clock ticks, by pid. During a run of the real server the reference is idle
 * (settle), so what they spend over the run is the real server's work, with what it sets off (WAL
 * writes, autovacuum).
 */
const postgresTicks = (): Map<number, number> => {
  const ticks = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').startsWith('postgres: '))
        ticks.set(Number(entry), processTicks(Number(entry)));
    } catch {
      // The process has gone.
    }
  }
  return ticks;
};

/**
 * What the Postgres processes spent between two postgresTicks: a process that ended meanwhile (a restarted reference's
 * backends) counts for nothing, a new one from zero.
 */
const postgresSpent = (before: Map<number, number>, after: Map<number, number>): number => {
  let spent = 0;
  for (const [pid, ticks] of after) spent += Math.max(0, ticks - (before.get(pid) ?? 0));
  return spent;
};

/** Busy and total ticks of the whole machine. */
const machineTicks = (): { busy: number; total: number } => {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] as string;
  const values = line.trim().split(/\s+/).slice(1).map(Number);
  const total = values.reduce((a, b) => a + b, 0);
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  return { busy: total - idle, total };
};

// ---------------------------------------------------------------------------------------------
// Load runs

interface RunResult {
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  maxLatency: number;
  requests: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  rssMaxMb: number;
  /** The server process's CPU time over the run, in % of one core. */
  serverCpu: number;
  /** CPU time per completed request, in µs: the server process's, and the Postgres server's (null on SQLite). */
  serverUsPerRequest: number;
  postgresUsPerRequest: number | null;
  /** The whole machine's busy time over the run, in % of all cores. */
  machineCpu: number;
  /** The 1-minute load average at the end of the run (other work on the machine shows here). */
  loadAverage: number;
}

interface AutocannonJson {
  requests: { average: number; total: number };
  latency: { p50: number; p90: number; p99: number; max: number };
  errors: number;
  timeouts: number;
  non2xx: number;
}

async function runLoad(
  server: ServerProcess,
  scenario: Scenario,
  key: string,
  options: BenchOptions,
  duration: number,
  tmpDir: string,
): Promise<RunResult> {
  const config: LoadConfig = {
    url: server.baseUrl,
    connections: options.connections,
    duration,
    timeout: 300,
    method: scenario.method,
    paths: scenario.paths,
    ...(scenario.bodies ? { bodies: scenario.bodies } : {}),
    headers: {
      authorization: `Bearer ${key}`,
      ...(scenario.method === 'POST' ? { 'content-type': 'application/json' } : {}),
    },
  };
  const configPath = join(tmpDir, `load-${server.role}-${scenario.name}.json`);
  writeFileSync(configPath, JSON.stringify(config));

  let rssMax = 0;
  const sample = () => {
    rssMax = Math.max(rssMax, readRssKb(server.pid, 'VmRSS'));
  };
  sample();
  // Taken when autocannon says it has started, so the start-up of its process is not counted.
  const postgres = server.postgresUrl !== undefined;
  const snapshot = () => ({
    cpu: processTicks(server.pid),
    postgres: postgres ? postgresTicks() : new Map<number, number>(),
    machine: machineTicks(),
    at: Date.now(),
  });
  let before = snapshot();
  const sampler = setInterval(sample, 200);
  try {
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', LOAD_SCRIPT, configPath], {
        cwd: BENCH_DIR,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.add(child);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => {
        if (!stdout.includes('start\n') && (stdout + chunk.toString()).includes('start\n')) {
          before = snapshot();
        }
        stdout += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('exit', (code) => {
        children.delete(child);
        if (code === 0) resolve(stdout);
        else reject(new Error(`autocannon exited with ${code}: ${stderr}`));
      });
    });
    const elapsed = (Date.now() - before.at) / 1000;
    const serverTicks = processTicks(server.pid) - before.cpu;
    const postgresTicksSpent = postgres ? postgresSpent(before.postgres, postgresTicks()) : 0;
    const cpu = (serverTicks / CLOCK_TICKS / elapsed) * 100;
    const machineAfter = machineTicks();
    const machineCpu =
      ((machineAfter.busy - before.machine.busy) / Math.max(1, machineAfter.total - before.machine.total)) * 100;
    const result = JSON.parse(output.trim().split('\n').pop() as string) as AutocannonJson;
    const perRequest = (ticks: number) => (ticks / CLOCK_TICKS / Math.max(1, result.requests.total)) * 1e6;
    return {
      rps: result.requests.average,
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      maxLatency: result.latency.max,
      requests: result.requests.total,
      errors: result.errors,
      timeouts: result.timeouts,
      non2xx: result.non2xx,
      rssMaxMb: rssMax / 1024,
      serverCpu: cpu,
      serverUsPerRequest: perRequest(serverTicks),
      postgresUsPerRequest: postgres ? perRequest(postgresTicksSpent) : null,
      machineCpu,
      loadAverage: loadavg()[0] as number,
    };
  } finally {
    clearInterval(sampler);
  }
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

interface Summary {
  rps: number;
  p50: number;
  p99: number;
  rssMaxMb: number;
  serverCpu: number;
  serverUsPerRequest: number;
  postgresUsPerRequest: number | null;
  machineCpu: number;
  /** Requests that failed (errors, timeouts, non-2xx) over all measured runs. */
  failures: number;
  runs: RunResult[];
}

const summarize = (runs: RunResult[]): Summary => ({
  rps: median(runs.map((r) => r.rps)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
  rssMaxMb: Math.max(...runs.map((r) => r.rssMaxMb)),
  serverCpu: median(runs.map((r) => r.serverCpu)),
  serverUsPerRequest: median(runs.map((r) => r.serverUsPerRequest)),
  postgresUsPerRequest: runs.every((r) => r.postgresUsPerRequest !== null)
    ? median(runs.map((r) => r.postgresUsPerRequest as number))
    : null,
  machineCpu: median(runs.map((r) => r.machineCpu)),
  failures: runs.reduce((sum, r) => sum + r.errors + r.timeouts + r.non2xx, 0),
  runs,
});

// ---------------------------------------------------------------------------------------------
// Same answers

/** Compares what both servers answer for each scenario's first request; returns a difference per scenario (or null). */
async function compareAnswers(
  real: ServerProcess,
  reference: ServerProcess,
  scenarios: Scenario[],
  key: string,
): Promise<Record<string, string | null>> {
  const differences: Record<string, string | null> = {};
  for (const scenario of scenarios) {
    const fetchBoth = async (server: ServerProcess) => {
      const response = await fetch(`${server.baseUrl}${scenario.paths[0]}`, {
        method: scenario.method,
        headers: { authorization: `Bearer ${key}`, ...(scenario.bodies ? { 'content-type': 'application/json' } : {}) },
        ...(scenario.bodies ? { body: scenario.bodies[0] } : {}),
      });
      return { status: response.status, body: (await response.json()) as unknown };
    };
    const [a, b] = [await fetchBoth(real), await fetchBoth(reference)];
    // A new message has its own id and time on each server.
    const normalize = (value: unknown) =>
      scenario.method === 'POST' && value && typeof value === 'object'
        ? { ...value, id: '…', created_at: '…', updated_at: '…' }
        : value;
    differences[scenario.name] =
      a.status !== b.status
        ? `status ${a.status} vs ${b.status}`
        : firstDifference(normalize(a.body), normalize(b.body), '');
  }
  return differences;
}

function firstDifference(a: unknown, b: unknown, path: string): string | null {
  if (a === b) return null;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object')
    return `${path || '(root)'}: ${JSON.stringify(a)?.slice(0, 80)} vs ${JSON.stringify(b)?.slice(0, 80)}`;
  const keys = new Set([...Object.keys(a as object), ...Object.keys(b as object)]);
  for (const k of keys) {
    const d = firstDifference(
      (a as Record<string, unknown>)[k],
      (b as Record<string, unknown>)[k],
      path ? `${path}.${k}` : k,
    );
    if (d) return d;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// One database

interface ScenarioResult {
  name: string;
  title: string;
  kind: Scenario['kind'];
  measures: string;
  real: Summary;
  reference: Summary;
  ratio: number;
  target: TargetCheck;
  sameAnswer: string | null;
}

interface DatabaseResult {
  dialect: Dialect;
  /** The code under test: the commit, the files of the server that differ from it, and the build that ran. */
  code: { commit: string; uncommitted: string[]; build: { builtAt: string; sha256: string } };
  startedAt: string;
  finishedAt: string;
  options: Omit<BenchOptions, 'dbs' | 'postgresUrl'>;
  machine: Record<string, string | number>;
  dataset: Omit<Dataset, 'key' | 'samples'> & {
    samples: Omit<Dataset['samples'], 'conversationIds' | 'openConversationIds'>;
  };
  referenceIndexes: string[];
  scenarios: ScenarioResult[];
  rss: { realPeakMb: number; referencePeakMb: number; limitMb: number; met: boolean };
  /** With --cpu-prof: where the real server's CPU went over the whole run (warm-ups included). */
  profile?: ProfileSummary;
}

/** What is about to run: git's view of the source, and the api build itself (its files' hash and time). */
function codeInfo(): DatabaseResult['code'] {
  const dist = join(REPO_DIR, 'apps/api/dist');
  const hash = createHash('sha256');
  let builtAt = 0;
  for (const file of readdirSync(dist)
    .filter((f) => f.endsWith('.js'))
    .sort()) {
    hash.update(file).update(readFileSync(join(dist, file)));
    builtAt = Math.max(builtAt, statSync(join(dist, file)).mtimeMs);
  }
  const build = { builtAt: new Date(builtAt).toISOString(), sha256: hash.digest('hex').slice(0, 12) };
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_DIR, encoding: 'utf8' }).trim();
    const status = execFileSync('git', ['status', '--porcelain', '--', 'apps/api', 'packages/core'], {
      cwd: REPO_DIR,
      encoding: 'utf8',
    });
    return {
      commit,
      uncommitted: status
        .split('\n')
        .filter(Boolean)
        .map((line) => line.slice(3)),
      build,
    };
  } catch {
    return { commit: 'unknown', uncommitted: [], build };
  }
}

async function machineInfo(dialect: Dialect, options: BenchOptions): Promise<Record<string, string | number>> {
  const info: Record<string, string | number> = {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  };
  if (dialect === 'postgres') {
    const client = new pg.Client({ connectionString: options.postgresUrl });
    await client.connect();
    try {
      info.postgres =
        (await client.query<{ server_version: string }>('show server_version')).rows[0]?.server_version ?? '?';
      for (const setting of ['shared_buffers', 'work_mem', 'max_connections', 'synchronous_commit']) {
        info[setting] = (await client.query<Record<string, string>>(`show ${setting}`)).rows[0]?.[setting] ?? '?';
      }
    } finally {
      await client.end();
    }
  } else {
    const db = new SQLite(':memory:');
    info.sqlite = db.prepare('select sqlite_version()').pluck().get() as string;
    db.close();
  }
  return info;
}

async function benchDatabase(dialect: Dialect, options: BenchOptions): Promise<DatabaseResult> {
  const startedAt = new Date().toISOString();
  const code = codeInfo();
  const dataset = await ensureDataset({
    dialect,
    scale: options.scale,
    seed: options.seed,
    postgresUrl: options.postgresUrl,
    regenerate: options.regenerate,
  });
  const databases = await prepareRunDatabases(dataset, options.postgresUrl);
  const speedAtStart = cpuSpeed();
  const logDir = join(DATA_DIR, 'logs', dialect);
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  const profileDir = join(logDir, 'cpu-profile');
  const real = startServer(
    'real',
    [...SERVER_NODE_FLAGS, ...(options.cpuProf ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []), API_BIN, 'serve'],
    {
      DATABASE_URL: databases.realUrl,
      CONVO_WORKER: 'false',
      LOG_LEVEL: 'silent',
      NODE_ENV: 'production',
      CONVO_DRAIN_SECONDS: '0',
      CONVO_SECRET_KEY: '0'.repeat(64),
    },
    options.port,
    logDir,
  );
  const reference = startServer(
    'reference',
    ['--import', 'tsx', REFERENCE_SCRIPT],
    { REFERENCE_DATABASE_URL: databases.referenceUrl, NODE_ENV: 'production' },
    options.port + 1,
    logDir,
  );
  if (dialect === 'postgres') {
    real.postgresUrl = databases.realUrl;
    reference.postgresUrl = databases.referenceUrl;
  }
  let result: DatabaseResult;
  try {
    await waitIdle(real);
    await waitIdle(reference);
    const all = buildScenarios(dataset.samples);
    const scenarios = options.scenarios.length ? all.filter((s) => options.scenarios.includes(s.name)) : all;
    if (scenarios.length === 0)
      throw new Error(
        `no scenario matches ${options.scenarios.join(', ')}; they are ${all.map((s) => s.name).join(', ')}`,
      );
    const differences = await compareAnswers(real, reference, scenarios, dataset.key);
    for (const [name, difference] of Object.entries(differences)) {
      log(`${dialect} ${name}: ${difference ? `ANSWERS DIFFER (${difference})` : 'same answer from both servers'}`);
    }

    const results: ScenarioResult[] = [];
    for (const scenario of scenarios) {
      log(`${dialect} ${scenario.name}: ${scenario.title}`);
      const runs: Record<ServerProcess['role'], RunResult[]> = { real: [], reference: [] };
      for (let i = 0; i < options.runs; i++) {
        for (const server of [real, reference]) {
          // Every measured run has its own warm-up, right before it: the other server's run in
          // between evicts this one's pages from the page cache (the reference reads whole tables)
          // and its JIT-compiled code goes cold; a run must measure the server, not its recovery.
          if (options.warmup > 0) {
            await runLoad(server, scenario, dataset.key, options, options.warmup, logDir);
            await settle(server);
          }
          const result = await runLoad(server, scenario, dataset.key, options, options.duration, logDir);
          runs[server.role].push(result);
          log(
            `  ${server.role.padEnd(9)} run ${i + 1}: ${result.rps.toFixed(0).padStart(6)} req/s  p50 ${result.p50} ms  p99 ${result.p99} ms  ` +
              `RSS ${result.rssMaxMb.toFixed(0)} MB  cpu ${result.serverCpu.toFixed(0)}%  ${cpuPerRequest(result)} µs/req` +
              (result.errors + result.timeouts + result.non2xx
                ? `  FAILED ${result.errors}/${result.timeouts}/${result.non2xx} (errors/timeouts/non-2xx)`
                : ''),
          );
          await settle(server);
        }
      }
      const realSummary = summarize(runs.real);
      const referenceSummary = summarize(runs.reference);
      results.push({
        name: scenario.name,
        title: scenario.title,
        kind: scenario.kind,
        measures: scenario.measures,
        real: realSummary,
        reference: referenceSummary,
        ratio: referenceSummary.rps > 0 ? realSummary.rps / referenceSummary.rps : Number.POSITIVE_INFINITY,
        target: checkTarget(scenario.kind, dialect, realSummary, referenceSummary),
        sameAnswer: differences[scenario.name] ?? null,
      });
    }
    const realPeakMb = readRssKb(real.pid, 'VmHWM') / 1024;
    // A restarted reference (settle) has its own VmHWM: the samples of the runs cover the earlier ones.
    const referencePeakMb = Math.max(
      readRssKb(reference.pid, 'VmHWM') / 1024,
      ...results.flatMap((s) => s.reference.runs.map((r) => r.rssMaxMb)),
    );
    const { key: _key, samples, ...datasetInfo } = dataset;
    const { conversationIds: _ids, openConversationIds: _open, ...sampleInfo } = samples;
    const { dbs: _dbs, postgresUrl: _url, ...runOptions } = options;
    result = {
      dialect,
      code,
      startedAt,
      finishedAt: new Date().toISOString(),
      options: runOptions,
      machine: {
        ...(await machineInfo(dialect, options)),
        sha256PerSecond: `${speedAtStart} at the start, ${cpuSpeed()} at the end`,
      },
      dataset: { ...datasetInfo, samples: sampleInfo },
      referenceIndexes: databases.referenceIndexes,
      scenarios: results,
      rss: { realPeakMb, referencePeakMb, limitMb: RSS_LIMIT_MB, met: realPeakMb < RSS_LIMIT_MB },
    };
  } finally {
    await stopServer(real);
    await stopServer(reference);
    if (!options.keep) await databases.cleanup();
  }
  if (options.cpuProf) {
    const file = existsSync(profileDir) ? readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile')) : undefined;
    if (file) result.profile = summarizeProfile(join(profileDir, file));
    else log(`no CPU profile was written to ${profileDir}`);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Report

/** Fewer completed requests than this per reference run make the ratio a rough one. */
const FEW_REQUESTS = 10;
const fewRequests = (s: ScenarioResult) => median(s.reference.runs.map((r) => r.requests)) < FEW_REQUESTS;
const fmt = (n: number, digits = 0) =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : '∞';
/** A run's or a summary's CPU µs a request: the server's, and on Postgres `+` Postgres'. */
const cpuPerRequest = ({
  serverUsPerRequest,
  postgresUsPerRequest,
}: Pick<RunResult, 'serverUsPerRequest' | 'postgresUsPerRequest'>) =>
  postgresUsPerRequest === null ? fmt(serverUsPerRequest) : `${fmt(serverUsPerRequest)} + ${fmt(postgresUsPerRequest)}`;
const mark = (met: boolean | null) => (met === null ? '–' : met ? 'yes' : '**no**');

export function renderMarkdown(result: DatabaseResult): string {
  const { dataset, options } = result;
  const c = dataset.samples.counts;
  const loads = result.scenarios.flatMap((s) => [...s.real.runs, ...s.reference.runs].map((r) => r.loadAverage));
  const lines = [
    `# Convo API benchmark: ${result.dialect}, ${dataset.scale.label} conversations`,
    '',
    `Code: commit ${result.code.commit}${result.code.uncommitted.length ? ` with uncommitted changes to ${result.code.uncommitted.join(', ')}` : ''}; api build ${result.code.build.sha256} of ${result.code.build.builtAt}.`,
    '',
    `${result.startedAt} → ${result.finishedAt}. ${options.connections} connections, ${options.duration} s per run, median of ${options.runs} runs, each after its own ${options.warmup} s warm-up, real and reference runs alternating.`,
    '',
    `Data (seed ${dataset.seed}): ${fmt(c.contacts)} contacts (${fmt(c.vipContacts)} vip), ${fmt(c.conversations)} conversations ` +
      `(${Object.entries(c.byStatus)
        .map(([k, v]) => `${k} ${fmt(v)}`)
        .join(', ')}; ${Object.entries(c.byPlatform)
        .map(([k, v]) => `${k} ${fmt(v)}`)
        .join(', ')}), ` +
      `${fmt(c.messages)} messages, ${fmt(c.orders)} orders, ${fmt(c.contactTags)} contact tags.`,
    '',
    `Machine: ${Object.entries(result.machine)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}. ` +
      `1-minute load average at the end of the runs: ${fmt(Math.min(...loads), 1)} to ${fmt(Math.max(...loads), 1)} (the harness itself accounts for about 2; more means other work shared the machine).`,
    '',
    `| scenario | real req/s | p50 ms | p99 ms | ref req/s | ref p50 | ref p99 | ratio | target | met | RSS MB | server CPU | CPU µs/req${result.dialect === 'postgres' ? ' (server + Postgres)' : ''} | failed |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: |',
    ...result.scenarios.map(
      (s) =>
        `| \`${s.title}\` | ${fmt(s.real.rps)} | ${fmt(s.real.p50)} | ${fmt(s.real.p99)} | ${fmt(s.reference.rps)} | ${fmt(s.reference.p50)} | ${fmt(s.reference.p99)} | ` +
        `${fmt(s.ratio, 2)}×${fewRequests(s) ? '¹' : ''} | ${s.target.rule} | ${mark(s.target.met)} | ${fmt(s.real.rssMaxMb)} | ${fmt(s.real.serverCpu)}% | ${cpuPerRequest(s.real)} | ${s.real.failures}${s.sameAnswer ? ' ⚠' : ''} |`,
    ),
    '',
    ...(result.scenarios.some(fewRequests)
      ? [
          `¹ The reference completed fewer than ${FEW_REQUESTS} requests per run (∞: none), so this ratio is rough; a longer --duration measures it better.`,
          '',
        ]
      : []),
    `Server RSS peak (VmHWM): real ${fmt(result.rss.realPeakMb)} MB (target < ${result.rss.limitMb} MB: ${mark(result.rss.met)}), reference ${fmt(result.rss.referencePeakMb)} MB.`,
    '',
    `Targets met: ${result.scenarios.filter((s) => s.target.met === true).length + (result.rss.met ? 1 : 0)} of ${result.scenarios.filter((s) => s.target.met !== null).length + 1}.`,
    '',
    '"server CPU" is the real server process\'s CPU time over a run in % of one core (near 100% = the Node process is the bottleneck). ' +
      '"CPU µs/req" is the CPU time per completed request of the real server process and, on Postgres, of the Postgres server\'s processes (the reference idles meanwhile), the medians of the runs: ' +
      "the work a request costs, which the machine's speed still moves (the same code measured 360–611 µs of server time a request for `search_name` minutes apart). " +
      '"failed" counts errors, timeouts and non-2xx responses of the real server over all measured runs; ⚠ marks a scenario whose first answer differed between the servers.',
    '',
    `Reference database indexes (primary keys only): ${result.referenceIndexes.join(', ')}.`,
    '',
  ];
  if (result.profile) lines.push(renderProfile(result.profile));
  const differing = result.scenarios.filter((s) => s.sameAnswer);
  if (differing.length)
    lines.push('Answers that differed:', '', ...differing.map((s) => `- ${s.name}: ${s.sameAnswer}`), '');
  return lines.join('\n');
}

function printTable(result: DatabaseResult) {
  const rows = result.scenarios.map((s) => [
    s.name,
    fmt(s.real.rps),
    fmt(s.real.p50),
    fmt(s.real.p99),
    fmt(s.reference.rps),
    fmt(s.reference.p99),
    `${fmt(s.ratio, 2)}x${fewRequests(s) ? '*' : ''}`,
    s.target.rule,
    s.target.met === null ? '-' : s.target.met ? 'yes' : 'NO',
    fmt(s.real.rssMaxMb),
  ]);
  const header = ['scenario', 'req/s', 'p50', 'p99', 'ref req/s', 'ref p99', 'ratio', 'target', 'met', 'RSS MB'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) =>
        i === 0 || i === 7 || i === 8 ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number),
      )
      .join('  ');
  process.stdout.write(
    `\n${result.dialect}, ${result.dataset.scale.label} conversations (latencies in ms)\n${line(header)}\n${rows.map(line).join('\n')}\n`,
  );
  if (result.scenarios.some(fewRequests))
    process.stdout.write(
      `* the reference completed fewer than ${FEW_REQUESTS} requests per run: a rough ratio (try a longer --duration)\n`,
    );
  process.stdout.write(
    `server RSS peak ${fmt(result.rss.realPeakMb)} MB (< ${result.rss.limitMb} MB: ${result.rss.met ? 'yes' : 'NO'})\n`,
  );
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const options = parseOptions(process.argv.slice(2));
  if (!existsSync(API_BIN))
    throw new Error(`${API_BIN} is missing: run "pnpm bench" from the repository root (it builds the api first)`);
  mkdirSync(RESULTS_DIR, { recursive: true });
  const written: string[] = [];
  for (const dialect of options.dbs) {
    const result = await benchDatabase(dialect, options);
    printTable(result);
    const stamp = result.startedAt.slice(0, 16).replace(':', '');
    const base = join(RESULTS_DIR, `${stamp}-${dialect}-${options.scale.label}`);
    writeFileSync(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(`${base}.md`, renderMarkdown(result));
    written.push(`${base}.json`, `${base}.md`);
  }
  process.stdout.write(`\nWritten: ${written.map((p) => p.slice(REPO_DIR.length + 1)).join(', ')}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  killChildren();
  process.exit(1);
});
