import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** A database made for one test file and thrown away after it. */
export interface TestDatabase {
  dialect: 'sqlite' | 'postgres';
  url: string;
  drop(): Promise<void>;
}

export const DEFAULT_TEST_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';
const postgresAdminUrl = () => process.env.TEST_DATABASE_URL || DEFAULT_TEST_POSTGRES_URL;

let postgresReachable: Promise<boolean> | undefined;

/**
 * Whether the suite can use Postgres. Outside CI an unreachable Postgres skips its half of
 * the suite with a warning; under CI=true it fails the run.
 */
export function postgresAvailable(): Promise<boolean> {
  postgresReachable ??= (async () => {
    const client = new pg.Client({ connectionString: postgresAdminUrl(), connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      await client.query('select 1');
      return true;
    } catch (error) {
      if (process.env.CI === 'true') {
        throw new Error(
          `Postgres is required under CI=true but ${postgresAdminUrl()} is unreachable: ${String(error)}`,
        );
      }
      console.warn(`Postgres at ${postgresAdminUrl()} is unreachable; its tests are skipped (${String(error)})`);
      return false;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return postgresReachable;
}

export async function createTestDatabase(dialect: 'sqlite' | 'postgres'): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'convo-test-'));
    return {
      dialect,
      url: `file:${join(dir, 'convo.db')}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `convo_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresAdminUrl() });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(postgresAdminUrl());
  url.pathname = `/${name}`;
  // TEST_PGBOUNCER_URL (`postgres://host:port`): a PgBouncer in front of the same server, which
  // the test database is reached through, while creating and dropping it goes direct
  // (vitest.resilience.config.ts). Named statements do not survive its change of server connection.
  if (process.env.TEST_PGBOUNCER_URL) {
    const { hostname, port } = new URL(process.env.TEST_PGBOUNCER_URL);
    url.hostname = hostname;
    url.port = port;
    url.searchParams.set('prepared_statements', 'false');
  }
  return {
    dialect,
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: postgresAdminUrl() });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}
