/**
 * Per-run copies of a pristine data set: one for the real server, and one for the reference
 * server with every index that is not a primary key dropped. Writes (POST /v1/messages) land in
 * the copies, so every run starts from the same data.
 */
import SQLite from 'better-sqlite3';
import { copyFileSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { Dataset } from './generate.js';
import { dropPostgresDatabase } from './generate.js';
import { DATA_DIR, postgresDatabaseUrl } from './options.js';

export interface RunDatabases {
  realUrl: string;
  referenceUrl: string;
  /** The indexes left in the reference copy (primary keys only). */
  referenceIndexes: string[];
  cleanup(): Promise<void>;
}

const log = (message: string) => process.stderr.write(`[copies] ${message}\n`);

/**
 * Drops every index of a SQLite file but the primary keys: indexes, search tables (virtual
 * tables) with the triggers that keep them, and UNIQUE constraints (their tables are rebuilt).
 */
function stripSqliteIndexes(path: string): string[] {
  const db = new SQLite(path);
  try {
    db.pragma('foreign_keys = OFF');
    db.pragma('legacy_alter_table = ON');
    for (const name of db.prepare(`select name from sqlite_master where type = 'trigger'`).pluck().all() as string[])
      db.exec(`drop trigger "${name}"`);
    const virtual = db
      .prepare(`select name from sqlite_master where type = 'table' and sql like 'create virtual table%'`)
      .pluck()
      .all() as string[];
    for (const name of virtual) db.exec(`drop table "${name}"`);
    const indexes = db
      .prepare(`select name from sqlite_master where type = 'index' and sql is not null`)
      .pluck()
      .all() as string[];
    for (const name of indexes) db.exec(`drop index "${name}"`);
    // UNIQUE constraints (contacts' phone, orders' number) have automatic indexes that only a rebuild removes.
    const tables = db
      .prepare(`select name, sql from sqlite_master where type = 'table' and sql like '%unique%'`)
      .all() as { name: string; sql: string }[];
    for (const { name, sql } of tables) {
      const withoutUnique = sql
        .replace(/,\s*constraint\s+"[^"]+"\s+unique\s*\([^)]*\)/gi, '')
        .replace(/^create table "[^"]+"/i, `create table "${name}__ref"`);
      db.transaction(() => {
        db.exec(withoutUnique);
        db.exec(`insert into "${name}__ref" select * from "${name}"`);
        db.exec(`drop table "${name}"`);
        db.exec(`alter table "${name}__ref" rename to "${name}"`);
      })();
    }
    // No VACUUM: the dropped indexes' pages stay free in the file (the tables are as they were);
    // vacuuming a 1M-conversation copy takes minutes.
    // Left: the automatic indexes of the primary keys.
    return db
      .prepare(`select tbl_name || '.' || name from sqlite_master where type = 'index' order by 1`)
      .pluck()
      .all() as string[];
  } finally {
    db.close();
  }
}

/** Drops every unique constraint and index of a Postgres database but the primary keys. */
async function stripPostgresIndexes(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const uniques = await client.query<{ table: string; name: string }>(
      `select conrelid::regclass::text as table, conname as name from pg_constraint where contype = 'u' and connamespace = 'public'::regnamespace`,
    );
    for (const { table, name } of uniques.rows) await client.query(`alter table ${table} drop constraint "${name}"`);
    const indexes = await client.query<{ name: string }>(
      `select i.indexrelid::regclass::text as name from pg_index i join pg_class c on c.oid = i.indrelid
       where c.relnamespace = 'public'::regnamespace and not i.indisprimary`,
    );
    for (const { name } of indexes.rows) await client.query(`drop index ${name}`);
    const left = await client.query<{ name: string }>(
      `select c.relname || '.' || i.indexrelid::regclass::text as name from pg_index i join pg_class c on c.oid = i.indrelid
       where c.relnamespace = 'public'::regnamespace order by 1`,
    );
    return left.rows.map((r) => r.name);
  } finally {
    await client.end();
  }
}

export async function prepareRunDatabases(dataset: Dataset, postgresUrl: string): Promise<RunDatabases> {
  if (dataset.dialect === 'sqlite') {
    const dir = join(DATA_DIR, 'run');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const real = join(dir, 'real.db');
    const reference = join(dir, 'reference.db');
    // The copies take the main file only: fold in whatever a reader left in the write-ahead log.
    const wal = `${dataset.location}-wal`;
    if (existsSync(wal) && statSync(wal).size > 0) {
      const db = new SQLite(dataset.location);
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
    }
    copyFileSync(dataset.location, real);
    copyFileSync(dataset.location, reference);
    log("sqlite: copies made; dropping the reference copy's indexes");
    const referenceIndexes = stripSqliteIndexes(reference);
    return {
      realUrl: `file:${real}`,
      referenceUrl: `file:${reference}`,
      referenceIndexes,
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const realName = `${dataset.location}_real`;
  const referenceName = `${dataset.location}_ref`;
  for (const name of [realName, referenceName]) {
    await dropPostgresDatabase(postgresUrl, name);
    const admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    try {
      // Postgres 15 copies a template through the WAL by default: a 200k copy wrote about 550 MB
      // of WAL, and the checkpoints it set off were still writing during the first scenarios
      // (server log, 2026-11-24). FILE_COPY copies the files (1.3 s) between two checkpoints.
      const version = Number(
        (await admin.query<{ server_version_num: string }>('show server_version_num')).rows[0]?.server_version_num,
      );
      await admin.query(
        `create database ${name} template ${dataset.location}${version >= 150000 ? ' strategy file_copy' : ''}`,
      );
    } finally {
      await admin.end();
    }
  }
  log("postgres: copies made from the template; dropping the reference copy's indexes");
  const referenceUrl = postgresDatabaseUrl(postgresUrl, referenceName);
  const referenceIndexes = await stripPostgresIndexes(referenceUrl);
  // Both copies keep the pristine database's statistics (CREATE DATABASE … TEMPLATE copies them).
  const realUrl = postgresDatabaseUrl(postgresUrl, realName);
  return {
    realUrl,
    referenceUrl,
    referenceIndexes,
    cleanup: async () => {
      await dropPostgresDatabase(postgresUrl, realName);
      await dropPostgresDatabase(postgresUrl, referenceName);
    },
  };
}
