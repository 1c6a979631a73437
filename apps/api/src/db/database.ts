import type SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type SqliteDatabase } from 'kysely';
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import type pg from 'pg';

/**
 * Each driver is loaded when a database of its kind is opened, not at start-up: a server keeps in
 * memory only the driver it uses (a few MB of resident memory each).
 */
const load = createRequire(import.meta.url);
import type { Database } from './schema.js';

/**
 * The one module that knows which database is in use. The rest of the code gets a Kysely
 * instance and the capabilities below, never the dialect's name.
 */
export interface DatabaseHandle {
  db: Kysely<Database>;
  /** `sqlite` or `postgres`: for logs and tests only. */
  dialect: 'sqlite' | 'postgres';
  /** Several processes may share this database (Postgres); SQLite is one process. */
  sharedAcrossProcesses: boolean;
  /** The Postgres pool, for stores that share it (rate-limit counters); undefined on SQLite. */
  pgPool: pg.Pool | undefined;
  /** True when the error is a unique-constraint violation. */
  isUniqueViolation(error: unknown): boolean;
  destroy(): Promise<void>;
}

export const DEFAULT_SQLITE_PATH = 'data/convo.db';

/** `postgres://…` → Postgres; `file:PATH` or a bare path → SQLite; unset → data/convo.db. */
export function parseDatabaseUrl(url: string | undefined): { dialect: 'postgres'; url: string } | { dialect: 'sqlite'; path: string } {
  if (!url) return { dialect: 'sqlite', path: DEFAULT_SQLITE_PATH };
  if (/^postgres(ql)?:\/\//i.test(url)) return { dialect: 'postgres', url };
  const path = url.replace(/^file:(\/\/)?/, '');
  return { dialect: 'sqlite', path: path || DEFAULT_SQLITE_PATH };
}

/**
 * Connections of a process's Postgres pool unless DATABASE_POOL_SIZE says otherwise (pg's own
 * default is 10). A request holds one for its statements only; one Node process keeps about a
 * core busy and its requests' statements cost Postgres about as much again, so a few connections
 * keep it fed, and the requests beyond them wait in the pool's queue, first come first served,
 * rather than as more backends that the operating system switches between. Measured on the
 * benchmark (bench/README.md, eleventh pass): against 10, pools of 4 to 6 served the same or more
 * requests a second in every scenario, writes included, with a narrower spread of latencies
 * (p99 of the three-character search 44 and 55 ms with 10, 33 and 36 with 6). It also leaves room in
 * Postgres' max_connections (100 by default) for more processes: 20 at 5 each.
 */
export const DEFAULT_POOL_SIZE = 5;

export function openDatabase(url: string | undefined, options: { poolSize?: number | undefined } = {}): DatabaseHandle {
  const target = parseDatabaseUrl(url);
  if (target.dialect === 'postgres') {
    const pg = load('pg') as typeof import('pg');
    const pool = new pg.Pool({
      connectionString: target.url,
      max: options.poolSize ?? DEFAULT_POOL_SIZE,
      // No parallel query plans, unless the URL's `options` say otherwise: the API runs many small
      // queries at once, and a count that starts worker processes took twice as long as one that
      // does not when the server was busy (bench/README.md).
      ...(new URL(target.url).searchParams.has('options') ? {} : { options: '-c max_parallel_workers_per_gather=0' }),
      // int8 (counts, amounts) as numbers: every value we store fits in 2^53.
      types: {
        getTypeParser: (oid: number, format?: 'text' | 'binary') =>
          oid === 20 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text'),
      },
    });
    // An idle client that loses its connection must not crash the process.
    pool.on('error', () => {});
    // Nor may a checked-out one: the pool only listens for errors of idle clients, so a connection
    // lost while a client is checked out (Postgres restarting mid-query) emitted an unhandled
    // 'error' and killed the server. The query itself still fails with the error, and the pool
    // drops the broken client when it is released.
    pool.on('connect', (client) => {
      client.on('error', () => {});
      runNamedStatements(client);
    });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return {
      db,
      dialect: 'postgres',
      sharedAcrossProcesses: true,
      pgPool: pool,
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
  keepStatistics(sqlite);
  const cached = withStatementCache(sqlite);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: cached }) });
  sqliteConnections.set(db, { sqlite, reads: new Map(), dataVersion: sqlite.prepare('pragma data_version').pluck() });
  return {
    db,
    dialect: 'sqlite',
    sharedAcrossProcesses: false,
    pgPool: undefined,
    isUniqueViolation: (error) => {
      const code = (error as { code?: string } | null)?.code;
      return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
    },
    destroy: () => db.destroy(),
  };
}

/** SQL text → statement name, for the queries that run as named prepared statements (Postgres). */
const statementNames = new Map<string, string>();

/**
 * Runs this SQL as a named prepared statement on Postgres: each connection parses it once and
 * then only binds and executes it (prepared() and executeNamed(): lookups by key or id, a
 * message's send, the list and search queries; Postgres re-plans with the values until a generic
 * plan proves no dearer). Other queries are parsed and planned every time.
 */
export function prepareOnPostgres(text: string): void {
  if (!statementNames.has(text)) statementNames.set(text, `convo_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`);
}

function runNamedStatements(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((config: unknown, values?: unknown, callback?: unknown) => {
    const name = typeof config === 'string' ? statementNames.get(config) : undefined;
    if (name === undefined) return query(config, values, callback);
    return callback === undefined ? query({ name, text: config, values }) : query({ name, text: config, values }, callback);
  }) as typeof client.query;
}

/** The better-sqlite3 connection behind each SQLite Kysely instance (not its transactions). */
const sqliteConnections = new WeakMap<object, { sqlite: SQLite.Database; reads: Map<string, SqliteRead | null>; dataVersion: SQLite.Statement }>();

/** A read prepared once (readNowOnSqlite): the statement in raw mode and the function that makes its rows. */
interface SqliteRead {
  statement: SQLite.Statement;
  toRow: (values: unknown[]) => Record<string, unknown>;
}

/**
 * A function that turns one raw row (an array of values) into an object with the statement's
 * column names, all objects of one statement sharing one shape. better-sqlite3 makes each object
 * row by looking every column name up in V8's string table, row by row: about a tenth of the
 * time of a read by id, and more on a page of 20.
 */
function rowMaker(statement: SQLite.Statement): (values: unknown[]) => Record<string, unknown> {
  const properties = statement.columns().map((column, i) => `${JSON.stringify(column.name)}: values[${i}]`);
  return new Function('values', `return { ${properties.join(', ')} };`) as (values: unknown[]) => Record<string, unknown>;
}

/**
 * SQLite's `PRAGMA data_version` of the connection behind `db`: a number that changes whenever
 * another connection (another process: the operator command) commits a change to the database,
 * and never for this connection's own writes. Undefined on Postgres, and while a transaction is
 * open on the connection (its snapshot says nothing about now).
 */
export function sqliteDataVersion(db: object): number | undefined {
  const connection = sqliteConnections.get(db);
  if (!connection || connection.sqlite.inTransaction) return undefined;
  return connection.dataVersion.get() as number;
}

/**
 * Runs a read on SQLite at once, synchronously, when nothing else can be using the connection:
 * `db` is the database itself (not a transaction) and no transaction is open on it. Kysely's
 * SQLite driver queues every query behind a lock and resolves it through several promises; a
 * better-sqlite3 read is synchronous, so when no transaction is open nothing can run between its
 * start and its end, and the lock guards nothing. Undefined when that is not so (or on Postgres):
 * the caller then goes through Kysely.
 */
export function readNowOnSqlite(db: object, text: string, parameters: readonly unknown[]): { rows: unknown[] } | undefined {
  const connection = sqliteConnections.get(db);
  if (!connection || connection.sqlite.inTransaction) return undefined;
  let read = connection.reads.get(text);
  if (read === undefined) {
    const statement = connection.sqlite.prepare(text);
    // null: not a read (a write goes through Kysely).
    read = statement.reader ? { statement: statement.raw(true), toRow: rowMaker(statement) } : null;
    if (connection.reads.size >= STATEMENT_CACHE_SIZE) connection.reads.delete(connection.reads.keys().next().value as string);
    connection.reads.set(text, read);
  }
  if (read === null) return undefined;
  const values = read.statement.all(...(parameters as unknown[])) as unknown[][];
  const rows = new Array<Record<string, unknown>>(values.length);
  for (let i = 0; i < values.length; i++) rows[i] = read.toRow(values[i] as unknown[]);
  return { rows };
}

/** Rows ANALYZE samples per index: statistics in milliseconds, whatever the table's size. */
const ANALYSIS_LIMIT = 1000;
const OPTIMIZE_EVERY_MS = 60 * 60 * 1000;

/**
 * The query planner's statistics (sqlite_stat1), kept as SQLite recommends for long-lived
 * connections: `PRAGMA optimize=0x10002` on open (analyses every table whose statistics are
 * missing or stale, e.g. after a bulk load) and `PRAGMA optimize` every hour. Without them SQLite
 * guesses, and walks whole indexes where a search or a filter would have driven the query.
 * Postgres keeps its own (autovacuum's ANALYZE).
 */
function keepStatistics(sqlite: SQLite.Database): void {
  sqlite.pragma(`analysis_limit = ${ANALYSIS_LIMIT}`);
  sqlite.pragma('optimize = 0x10002');
  const timer = setInterval(() => {
    if (sqlite.open) sqlite.pragma('optimize');
  }, OPTIMIZE_EVERY_MS);
  timer.unref();
  const close = sqlite.close.bind(sqlite);
  sqlite.close = () => {
    clearInterval(timer);
    return close();
  };
}

/** Prepared statements kept per SQL text; the queries the API runs are a few hundred shapes. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * better-sqlite3 behind Kysely prepares every query anew (parse + plan each time); this keeps the
 * prepared statements, least recently used out first. Reuse is safe: Kysely runs one query at a
 * time on the connection and each call binds its own parameters.
 */
function withStatementCache(sqlite: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>();
  return {
    prepare(text: string) {
      let statement = cache.get(text);
      if (statement) {
        cache.delete(text);
      } else {
        statement = sqlite.prepare(text);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
      }
      cache.set(text, statement);
      return statement as unknown as ReturnType<SqliteDatabase['prepare']>;
    },
    close: () => sqlite.close(),
  };
}
