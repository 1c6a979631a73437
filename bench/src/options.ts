import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The Postgres the benches create their databases on: $BENCH_POSTGRES_URL, else the local one. */
export const DEFAULT_POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** bench/ */
export const BENCH_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The monorepo root. */
export const REPO_DIR = resolve(BENCH_DIR, '..');
/** Generated data sets, cached by database, scale and seed (git-ignored). */
export const DATA_DIR = resolve(BENCH_DIR, '.data');
export const RESULTS_DIR = resolve(BENCH_DIR, 'results');

export type Dialect = 'sqlite' | 'postgres';

export interface Scale {
  /** As given on the command line, normalised: `200k`, `1m`, `20k`. */
  label: string;
  conversations: number;
  contacts: number;
}

/** `200k` (the default: 50k contacts, 200k conversations), `1m`, `20k`, or a plain number of conversations. */
export function parseScale(value: string, contacts?: number): Scale {
  const match = /^(\d+(?:\.\d+)?)([km]?)$/i.exec(value.trim());
  if (!match) throw new Error(`--scale must look like 200k, 1m or 50000, got "${value}"`);
  const unit = (match[2] ?? '').toLowerCase();
  const conversations = Math.round(Number(match[1]) * (unit === 'm' ? 1_000_000 : unit === 'k' ? 1_000 : 1));
  if (conversations < 100) throw new Error('--scale must be at least 100 conversations');
  const label =
    conversations % 1_000_000 === 0
      ? `${conversations / 1_000_000}m`
      : conversations % 1000 === 0
        ? `${conversations / 1000}k`
        : String(conversations);
  return { label, conversations, contacts: contacts ?? Math.max(25, Math.round(conversations / 4)) };
}

export interface BenchOptions {
  dbs: Dialect[];
  scale: Scale;
  seed: number;
  /** Seconds per measured run. */
  duration: number;
  runs: number;
  connections: number;
  /** Seconds of warm-up before each measured run (not measured). */
  warmup: number;
  /** Only these scenarios (names), all when empty. */
  scenarios: string[];
  regenerate: boolean;
  /** Leave the per-run copies (databases, files) in place after the run. */
  keep: boolean;
  /** Run the real server under `node --cpu-prof` and add a summary to the report. */
  cpuProf: boolean;
  /** Admin connection for Postgres: databases are created next to it. */
  postgresUrl: string;
  port: number;
}

const HELP = `Usage: pnpm bench [-- options]

  --db sqlite|postgres|both   databases to measure (default both)
  --scale 200k|1m|N           conversations (contacts = conversations / 4); default 200k
  --contacts N                override the number of contacts
  --seed N                    generator seed (default 42)
  --duration S                seconds per measured run (default 10)
  --runs N                    measured runs per scenario, the median is reported (default 3)
  --connections N             concurrent connections (default 32)
  --warmup S                  warm-up seconds before each measured run (default 3)
  --scenario a,b              only these scenarios (see bench/README.md)
  --regenerate                rebuild the cached data set
  --keep                      keep the per-run database copies
  --cpu-prof                  profile the real server's CPU (best with one --scenario) and summarise it in the report
  --postgres-url URL          admin connection (default $BENCH_POSTGRES_URL or postgres://postgres@127.0.0.1:5432/postgres)
  --port N                    first port to use (default 3901; the reference server takes the next)
`;

export function parseOptions(argv: readonly string[]): BenchOptions {
  const values = new Map<string, string>();
  const flags = new Set<string>();
  const booleans = new Set(['regenerate', 'keep', 'cpu-prof', 'help']);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') continue;
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!match) throw new Error(`Unexpected argument "${arg}"\n\n${HELP}`);
    const name = match[1] as string;
    if (booleans.has(name)) {
      flags.add(name);
      continue;
    }
    const value = match[2] ?? argv[++i];
    if (value === undefined) throw new Error(`--${name} needs a value`);
    values.set(name, value);
  }
  if (flags.has('help')) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const known = new Set([
    'db',
    'scale',
    'contacts',
    'seed',
    'duration',
    'runs',
    'connections',
    'warmup',
    'scenario',
    'scenarios',
    'postgres-url',
    'port',
  ]);
  for (const name of values.keys()) if (!known.has(name)) throw new Error(`Unknown option --${name}\n\n${HELP}`);

  const number = (name: string, fallback: number, min = 0) => {
    const raw = values.get(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min) throw new Error(`--${name} must be a number ≥ ${min}, got "${raw}"`);
    return n;
  };
  const db = values.get('db') ?? 'both';
  if (!['sqlite', 'postgres', 'both'].includes(db))
    throw new Error(`--db must be sqlite, postgres or both, got "${db}"`);
  const contacts = values.has('contacts') ? number('contacts', 0, 25) : undefined;
  return {
    dbs: db === 'both' ? ['sqlite', 'postgres'] : [db as Dialect],
    scale: parseScale(values.get('scale') ?? '200k', contacts),
    seed: Math.floor(number('seed', 42)),
    duration: number('duration', 10, 1),
    runs: Math.floor(number('runs', 3, 1)),
    connections: Math.floor(number('connections', 32, 1)),
    warmup: number('warmup', 3, 0),
    scenarios: (values.get('scenario') ?? values.get('scenarios') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    regenerate: flags.has('regenerate'),
    keep: flags.has('keep'),
    cpuProf: flags.has('cpu-prof'),
    postgresUrl: values.get('postgres-url') ?? DEFAULT_POSTGRES_URL,
    port: Math.floor(number('port', 3901, 1)),
  };
}

/** The connection string of another database on the same Postgres server. */
export function postgresDatabaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}
