/**
 * Builds (or reuses) the benchmark data set of one database: the schema by the api's own
 * migrations, one enterprise account with a full-access key by the api's accountsService, then the
 * seeded rows by bulk SQL (prepared inserts in transactions on SQLite, unnest() batches on
 * Postgres). Cached by database, scale and seed in bench/.data.
 *
 *   node --import tsx src/generate.ts [--db sqlite|postgres|both] [--scale 200k] [--seed 42] [--regenerate]
 */
import { accountsService, migrateToLatest, openDatabase } from '@convo/api';
import SQLite from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import {
  GENERATOR_VERSION,
  type Row,
  type RowSink,
  type Samples,
  TABLES,
  type TableName,
  generateData,
} from './data.js';
import { DATA_DIR, type Dialect, REPO_DIR, type Scale, parseOptions, postgresDatabaseUrl } from './options.js';

export interface Dataset {
  version: number;
  /** Hash of the api's migrations the schema was made with: other migrations, another data set. */
  migrations: string;
  dialect: Dialect;
  scale: Scale;
  seed: number;
  /** SQLite: the pristine file; Postgres: the pristine database's name. */
  location: string;
  accountId: string;
  /** The full-access key (bench data only). */
  key: string;
  samples: Samples;
  generatedAt: string;
  loadSeconds: number;
}

const MIGRATIONS_DIR = join(REPO_DIR, 'apps/api/src/db/migrations');

/**
 * The api's migrations (names and contents) and the generator's version, hashed: a data set is
 * rebuilt when either changes, so it always has the schema (indexes, search tables, triggers) of
 * the server under test, and derived data filled by the migrations' triggers.
 */
export function schemaHash(): string {
  const hash = createHash('sha256').update(`generator ${GENERATOR_VERSION}\n`);
  for (const name of sourceMigrations()) {
    hash.update(`${name}\n`).update(readFileSync(join(MIGRATIONS_DIR, name)));
  }
  return hash.digest('hex').slice(0, 8);
}

/** The file names of the api's migrations in its source. */
const sourceMigrations = () =>
  readdirSync(MIGRATIONS_DIR)
    .filter((f) => /\.ts$/.test(f) && !/\.test\.ts$/.test(f))
    .sort();

/**
 * The data set is keyed by the source's migrations (schemaHash) but migrated by the api's build
 * (`@convo/api` is its `dist`): a build older than the source would make a data set without the
 * newest migrations under the newest key, and the server under test would fail on it. `pnpm bench`
 * builds first; running the generator alone after changing a migration needs `pnpm build`.
 */
async function assertBuildMigratesSource(handle: ReturnType<typeof openDatabase>): Promise<void> {
  const applied = (
    await handle.db
      .selectFrom('kysely_migration' as never)
      .select('name' as never)
      .orderBy('name' as never)
      .execute()
  ).map((row) => (row as { name: string }).name);
  const source = sourceMigrations().map((file) => file.replace(/\.ts$/, ''));
  if (applied.join() !== source.join()) {
    throw new Error(
      `the api's build (apps/api/dist) applied the migrations ${applied.join(', ')}, its source has ${source.join(', ')}: run \`pnpm build\` first (pnpm bench does)`,
    );
  }
}

/** `200k-s42`, or `200k-c12000-s42` with a non-default number of contacts. */
export const datasetKey = (scale: Scale, seed: number) =>
  `${scale.label}${scale.contacts === Math.max(25, Math.round(scale.conversations / 4)) ? '' : `-c${scale.contacts}`}-s${seed}`;

const metaPath = (dialect: Dialect, scale: Scale, seed: number) =>
  join(DATA_DIR, `${dialect}-${datasetKey(scale, seed)}.json`);
export const pristinePostgresName = (scale: Scale, seed: number, migrations: string) =>
  `convo_bench_${datasetKey(scale, seed).replace(/-/g, '_')}_${migrations}`;

const log = (message: string) => process.stderr.write(`[generate] ${message}\n`);

/** Bulk inserts into SQLite: one prepared statement per table, each batch in one transaction. */
class SqliteSink implements RowSink {
  private readonly statements = new Map<TableName, SQLite.Statement>();
  private readonly insertBatch: (statement: SQLite.Statement, rows: Row[]) => void;

  constructor(readonly db: SQLite.Database) {
    db.pragma('synchronous = OFF');
    db.pragma('foreign_keys = OFF');
    db.pragma('cache_size = -262144');
    this.insertBatch = db.transaction((statement: SQLite.Statement, rows: Row[]) => {
      for (const row of rows) statement.run(row);
    });
  }

  async insert(table: TableName, rows: Row[]): Promise<void> {
    let statement = this.statements.get(table);
    if (!statement) {
      const columns = TABLES[table].map(([name]) => name);
      statement = this.db.prepare(
        `insert into ${table} (${columns.join(', ')}) values (${columns.map(() => '?').join(', ')})`,
      );
      this.statements.set(table, statement);
    }
    this.insertBatch(statement, rows);
  }
}

/**
 * Bulk inserts into Postgres: one `insert … select * from unnest($1::text[], …)` per batch, a few in flight on a small
 * pool.
 */
class PostgresSink implements RowSink {
  private readonly inFlight: Promise<unknown>[] = [];
  private failure: unknown;

  constructor(readonly pool: pg.Pool) {}

  async insert(table: TableName, rows: Row[]): Promise<void> {
    if (this.failure) throw this.failure;
    const columns = TABLES[table];
    const arrays = columns.map((_, c) => rows.map((row) => row[c] ?? null));
    const text = `insert into ${table} (${columns.map(([name]) => name).join(', ')}) select * from unnest(${columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})`;
    const query = this.pool.query(text, arrays).catch((error: unknown) => {
      this.failure ??= error;
    });
    this.inFlight.push(query);
    while (this.inFlight.length > 3) await this.inFlight.shift();
    if (this.failure) throw this.failure;
  }

  async flush(): Promise<void> {
    await Promise.all(this.inFlight.splice(0));
    if (this.failure) throw this.failure;
  }
}

async function adminQuery<T extends pg.QueryResultRow = pg.QueryResultRow>(
  adminUrl: string,
  text: string,
): Promise<pg.QueryResult<T>> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await client.query<T>(text);
  } finally {
    await client.end();
  }
}

export async function postgresDatabaseExists(adminUrl: string, name: string): Promise<boolean> {
  const result = await adminQuery(adminUrl, `select 1 from pg_database where datname = '${name}'`);
  return result.rowCount === 1;
}

export const dropPostgresDatabase = (adminUrl: string, name: string) =>
  adminQuery(adminUrl, `drop database if exists ${name} with (force)`);

/** The schema by the api's migrations, and the bench account (enterprise, a huge limit) with a full-access key. */
async function createSchemaAndAccount(url: string): Promise<{ accountId: string; key: string }> {
  const handle = openDatabase(url);
  try {
    await migrateToLatest(handle.db);
    await assertBuildMigratesSource(handle);
    const account = await accountsService.createAccount(
      { database: handle },
      {
        name: 'Convo bench',
        plan: 'enterprise',
        rateLimitRpm: 1_000_000_000,
      },
    );
    const key = await accountsService.createKey(
      { database: handle },
      { accountId: account.id, type: 'full_access', name: 'bench' },
    );
    return { accountId: account.id, key: key.key };
  } finally {
    await handle.destroy();
  }
}

/**
 * What the migrations' triggers keep from other tables' rows (migration 0006's conversation
 * counts, migration 0007's count of each contact's conversations, migration 0008's copies of the
 * contacts' names and their trigram counts), computed afresh from the loaded
 * rows: the Postgres load runs without triggers. A new column or table of that kind belongs here.
 */
const REFILL_DERIVED_TABLES = `delete from contact_tag_counts;
  insert into contact_tag_counts (account_id, tag, contacts)
    select account_id, tag, count(*) from contact_tags group by account_id, tag;
  delete from conversation_counts;
  insert into conversation_counts (account_id, status, platform, count)
    select account_id, status, platform, count(*) from conversations group by account_id, status, platform;
  update contacts set conversation_count = (
    select count(*) from conversations where conversations.account_id = contacts.account_id and conversations.contact_id = contacts.id);
  update conversations set contact_name_search = (
    select name_search from contacts where contacts.account_id = conversations.account_id and contacts.id = conversations.contact_id);
  delete from conversation_name_trigrams;
  insert into conversation_name_trigrams (account_id, trigram, conversations)
    select account_id, trigram, count(*) from (
      select distinct c.account_id, c.id, substr(c.contact_name_search, p.i, 3) as trigram
      from conversations c join (
        with recursive p(i) as (select 1 union all select i + 1 from p where i < (select max(length(contact_name_search)) from conversations) - 2) select i from p
      ) p on p.i <= length(c.contact_name_search) - 2) t
    group by account_id, trigram`;

type Built = Omit<Dataset, 'generatedAt' | 'loadSeconds' | 'version' | 'migrations'>;

async function buildSqlite(path: string, scale: Scale, seed: number): Promise<Built> {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
  const { accountId, key } = await createSchemaAndAccount(`file:${path}`);
  const db = new SQLite(path);
  try {
    const samples = await generateData(new SqliteSink(db), accountId, scale, seed, log);
    db.exec(REFILL_DERIVED_TABLES);
    const broken = db.prepare('pragma foreign_key_check').all();
    if (broken.length)
      throw new Error(`generated rows break ${broken.length} foreign keys, e.g. ${JSON.stringify(broken[0])}`);
    db.pragma('wal_checkpoint(TRUNCATE)');
    return { dialect: 'sqlite', scale, seed, location: path, accountId, key, samples };
  } finally {
    db.close();
  }
}

async function buildPostgres(adminUrl: string, name: string, scale: Scale, seed: number): Promise<Built> {
  await dropPostgresDatabase(adminUrl, name);
  await adminQuery(adminUrl, `create database ${name}`);
  const url = postgresDatabaseUrl(adminUrl, name);
  const { accountId, key } = await createSchemaAndAccount(url);
  // Skips the foreign-key triggers while loading: the same generator's rows pass SQLite's foreign_key_check.
  const pool = new pg.Pool({
    connectionString: url,
    max: 3,
    options: '-c synchronous_commit=off -c session_replication_role=replica',
  });
  let samples: Samples;
  try {
    const sink = new PostgresSink(pool);
    samples = await generateData(sink, accountId, scale, seed, log);
    await sink.flush();
  } finally {
    await pool.end();
  }
  // The load ran without triggers (session_replication_role): what they keep is filled here, still
  // without them (they would count each copied name's trigrams once more, row by row).
  await adminQuery(url, `begin; set local session_replication_role = replica; ${REFILL_DERIVED_TABLES}; commit`);
  log('vacuum analyze');
  await adminQuery(url, 'vacuum analyze');
  await adminQuery(url, 'checkpoint');
  return { dialect: 'postgres', scale, seed, location: name, accountId, key, samples };
}

/**
 * The data set of `dialect` at `scale` and `seed`: the cached one when it is there and of this
 * generator's version, else a new one.
 */
export async function ensureDataset(input: {
  dialect: Dialect;
  scale: Scale;
  seed: number;
  postgresUrl: string;
  regenerate?: boolean;
}): Promise<Dataset> {
  const { dialect, scale, seed } = input;
  mkdirSync(DATA_DIR, { recursive: true });
  const meta = metaPath(dialect, scale, seed);
  const migrations = schemaHash();
  if (existsSync(meta)) {
    const cached = JSON.parse(readFileSync(meta, 'utf8')) as Dataset;
    const present =
      dialect === 'sqlite'
        ? existsSync(cached.location)
        : await postgresDatabaseExists(input.postgresUrl, cached.location);
    if (!input.regenerate && cached.version === GENERATOR_VERSION && cached.migrations === migrations && present) {
      log(`${dialect} ${datasetKey(scale, seed)}: cached (${cached.location})`);
      return cached;
    }
    // Stale: another schema or generator. Its data goes, so that old sets do not pile up.
    if (present) {
      log(`${dialect} ${datasetKey(scale, seed)}: dropping the stale data set ${cached.location}`);
      if (dialect === 'sqlite')
        for (const suffix of ['', '-wal', '-shm']) rmSync(`${cached.location}${suffix}`, { force: true });
      else await dropPostgresDatabase(input.postgresUrl, cached.location);
    }
  }
  rmSync(meta, { force: true });
  log(
    `${dialect} ${datasetKey(scale, seed)}: ${scale.contacts} contacts, ${scale.conversations} conversations (schema ${migrations})`,
  );
  const started = Date.now();
  const built =
    dialect === 'sqlite'
      ? await buildSqlite(join(DATA_DIR, `sqlite-${datasetKey(scale, seed)}-${migrations}.db`), scale, seed)
      : await buildPostgres(input.postgresUrl, pristinePostgresName(scale, seed, migrations), scale, seed);
  const dataset: Dataset = {
    version: GENERATOR_VERSION,
    migrations,
    ...built,
    generatedAt: new Date().toISOString(),
    loadSeconds: (Date.now() - started) / 1000,
  };
  writeFileSync(meta, `${JSON.stringify(dataset, null, 2)}\n`);
  log(`${dialect}: loaded in ${dataset.loadSeconds.toFixed(1)} s`);
  return dataset;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const options = parseOptions(process.argv.slice(2));
  for (const dialect of options.dbs) {
    const dataset = await ensureDataset({
      dialect,
      scale: options.scale,
      seed: options.seed,
      postgresUrl: options.postgresUrl,
      regenerate: options.regenerate,
    });
    const { conversationIds, openConversationIds, ...samples } = dataset.samples;
    process.stdout.write(
      `${JSON.stringify({ dialect, location: dataset.location, loadSeconds: dataset.loadSeconds, samples }, null, 2)}\n`,
    );
  }
}
