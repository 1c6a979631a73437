import type SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import type pg from 'pg';
import { type Dialect, dialects } from './dialect.js';
import type { Database } from './schema.js';
import { preparedStatementsPool } from './postgres-prepared-statements.js';
import { withStatementCache } from './sqlite-statement-cache.js';

/** Drivers load when a database of their kind opens, so a server keeps only the driver it uses in memory. */
const load = createRequire(import.meta.url);

/** An open database: a Kysely instance and the capabilities the rest of the code may ask about. */
export interface DatabaseHandle {
  db: Kysely<Database>;
  /** `sqlite` or `postgres`: for logs and tests only. */
  dialect: 'sqlite' | 'postgres';
  /** What the database supports and how it spells the SQL that differs: the repositories' one source of it. */
  capabilities: Dialect;
  /** Several processes may share this database (Postgres); SQLite is one process. */
  sharedAcrossProcesses: boolean;
  /** The Postgres pool, for stores that share it (rate-limit counters); undefined on SQLite. */
  pgPool: pg.Pool | undefined;
  /** Statements may be named (prepared once per connection): false behind a transaction-mode pooler. */
  preparedStatements: boolean;
  /**
   * A number that changes whenever another connection commits (SQLite's `data_version`): a cheap check of what
   * this process caches. Undefined on Postgres, where no such cheap watch exists.
   */
  commitsElsewhere: (() => number) | undefined;
  /** True when the error is a unique-constraint violation. */
  isUniqueViolation(error: unknown): boolean;
  destroy(): Promise<void>;
}

export const DEFAULT_SQLITE_PATH = 'data/convo.db';

/** `postgres://…` → Postgres; `file:PATH` or a bare path → SQLite; unset → data/convo.db. */
export function parseDatabaseUrl(
  url: string | undefined,
): { dialect: 'postgres'; url: string } | { dialect: 'sqlite'; path: string } {
  if (!url) return { dialect: 'sqlite', path: DEFAULT_SQLITE_PATH };
  if (/^postgres(ql)?:\/\//i.test(url)) return { dialect: 'postgres', url };
  const path = url.replace(/^file:(\/\/)?/, '');
  return { dialect: 'sqlite', path: path || DEFAULT_SQLITE_PATH };
}

/**
 * Postgres connections per process unless DATABASE_POOL_SIZE says otherwise: one Node process keeps only a few
 * busy, so extra requests queue in the pool instead of competing as backends, and max_connections keeps room
 * for more processes.
 */
export const DEFAULT_POOL_SIZE = 5;

/** Where the pool reports connection errors: a pino logger, or anything with its `warn(obj, msg)`. */
export interface DatabaseLogger {
  warn(obj: object, msg: string): void;
}

const stderrLogger: DatabaseLogger = { warn: (obj, msg) => console.warn(msg, obj) };

export function openDatabase(
  url: string | undefined,
  options: { poolSize?: number | undefined; logger?: DatabaseLogger | undefined } = {},
): DatabaseHandle {
  const target = parseDatabaseUrl(url);
  const logger = options.logger ?? stderrLogger;
  if (target.dialect === 'postgres') {
    const pg = load('pg') as typeof import('pg');
    // `prepared_statements=false` is ours, not libpq's: pg is given the URL without it.
    const connectionUrl = new URL(target.url);
    const preparedStatements = connectionUrl.searchParams.get('prepared_statements') !== 'false';
    connectionUrl.searchParams.delete('prepared_statements');
    const pool = new pg.Pool({
      connectionString: connectionUrl.toString(),
      max: options.poolSize ?? DEFAULT_POOL_SIZE,
      // No parallel plans and no JIT unless the URL's `options` say otherwise: the API runs many small queries
      // at once, and JIT would compile the job claim on a deep queue (holds the backlog target of bench/README.md).
      ...(connectionUrl.searchParams.has('options')
        ? {}
        : { options: '-c max_parallel_workers_per_gather=0 -c jit=off' }),
      // int8 (counts, amounts) as numbers: every value we store fits in 2^53.
      types: {
        getTypeParser: (oid: number, format?: 'text' | 'binary') =>
          oid === 20 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text'),
      },
    });
    // A lost connection, idle or checked out, must not crash the process; only its first error is logged,
    // since the later ones (the socket closing after a FATAL) add nothing.
    pool.on('connect', (client) => {
      let failed = false;
      client.on('error', (err) => {
        if (!failed) logger.warn({ err }, 'a Postgres connection failed');
        failed = true;
      });
    });
    // The pool re-emits an idle client's error, already logged by the client's listener.
    pool.on('error', () => {});
    const db = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: preparedStatements ? preparedStatementsPool(pool) : pool }),
    });
    return {
      db,
      dialect: 'postgres',
      capabilities: dialects.postgres,
      sharedAcrossProcesses: true,
      pgPool: pool,
      preparedStatements,
      commitsElsewhere: undefined,
      isUniqueViolation: (error) => (error as { code?: string } | null)?.code === '23505',
      destroy: () => db.destroy(),
    };
  }

  const path = target.path === ':memory:' ? target.path : resolve(target.path);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const Driver = load('better-sqlite3') as typeof import('better-sqlite3');
  const sqlite = new Driver(path);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const stopStatistics = keepStatistics(sqlite);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  const dataVersion = sqlite.prepare('PRAGMA data_version').pluck();
  return {
    db,
    dialect: 'sqlite',
    capabilities: dialects.sqlite,
    sharedAcrossProcesses: false,
    pgPool: undefined,
    preparedStatements: true,
    commitsElsewhere: () => dataVersion.get() as number,
    isUniqueViolation: (error) => {
      const code = (error as { code?: string } | null)?.code;
      return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
    },
    destroy: async () => {
      stopStatistics();
      await db.destroy();
    },
  };
}

/** Rows ANALYZE samples per index, so gathering statistics stays quick whatever the table's size. */
const ANALYSIS_LIMIT = 1000;
const OPTIMIZE_EVERY_MS = 60 * 60 * 1000;

/**
 * Keeps the planner's statistics current as SQLite recommends for long-lived connections; without them SQLite
 * walks whole indexes where a search should drive the query. Postgres keeps its own through autovacuum.
 */
function keepStatistics(sqlite: SQLite.Database): () => void {
  sqlite.pragma(`analysis_limit = ${ANALYSIS_LIMIT}`);
  sqlite.pragma('optimize = 0x10002');
  const timer = setInterval(() => {
    if (sqlite.open) sqlite.pragma('optimize');
  }, OPTIMIZE_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
