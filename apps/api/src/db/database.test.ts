import { type Kysely, sql } from 'kysely';
import { describe, expect, it, vi } from 'vitest';
import { ACTIVE_DIALECTS } from '../testing/harness.js';
import { createTestDatabase } from '../testing/databases.js';
import { DEFAULT_POOL_SIZE, openDatabase } from './database.js';
import { migrateToLatest } from './migrate.js';
import type { Database } from './schema.js';

describe('SQLite planner statistics', () => {
  it('are gathered on open for tables filled since the last analysis (a bulk load)', async () => {
    const target = await createTestDatabase('sqlite');
    try {
      const first = openDatabase(target.url);
      await migrateToLatest(first.db);
      // Rows written behind the server's back, as a bulk import would.
      await sql`insert into accounts (id, name, plan, rate_limit_rpm, created_at, updated_at) values ('acct_1', 'A', 'free', null, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`.execute(
        first.db,
      );
      await sql`delete from sqlite_stat1`.execute(first.db).catch(() => undefined);
      for (let i = 0; i < 300; i++) {
        await sql`insert into contacts (account_id, id, name, name_search, phone, phone_digits, email, email_search, tags, attributes, created_at, updated_at)
          values ('acct_1', ${`ct_${i}`}, ${`N ${i}`}, ${`n ${i}`}, ${`+1555${1_000_000 + i}`}, ${`1555${1_000_000 + i}`}, null, null, '[]', '{}', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`.execute(
          first.db,
        );
      }
      await first.destroy();

      const reopened = openDatabase(target.url);
      const stats = await sql<{
        tbl: string;
        stat: string;
      }>`select tbl, stat from sqlite_stat1 where tbl = 'contacts'`.execute(reopened.db);
      await reopened.destroy();
      expect(stats.rows.length).toBeGreaterThan(0);
      expect(stats.rows.some((row) => row.stat.startsWith('300 '))).toBe(true);
    } finally {
      await target.drop();
    }
  });
});

describe.runIf(ACTIVE_DIALECTS.includes('postgres'))('Postgres rate-limit counters', () => {
  it('live in an unlogged table (no WAL flush per request)', async () => {
    const target = await createTestDatabase('postgres');
    const database = openDatabase(target.url);
    try {
      await migrateToLatest(database.db);
      const row = await sql<{
        relpersistence: string;
      }>`select relpersistence from pg_class where relname = 'rate_limits'`.execute(database.db);
      expect(row.rows).toEqual([{ relpersistence: 'u' }]);
    } finally {
      await database.destroy();
      await target.drop();
    }
  });
});

describe.runIf(ACTIVE_DIALECTS.includes('postgres'))('Postgres sessions', () => {
  it('plan without parallel workers, unless the URL asks otherwise', async () => {
    const target = await createTestDatabase('postgres');
    const setting = async (url: string) => {
      const database = openDatabase(url);
      try {
        const result = await sql<{
          max_parallel_workers_per_gather: string;
        }>`show max_parallel_workers_per_gather`.execute(database.db);
        return result.rows[0]?.max_parallel_workers_per_gather;
      } finally {
        await database.destroy();
      }
    };
    try {
      expect(await setting(target.url)).toBe('0');
      const url = new URL(target.url);
      url.searchParams.set('options', '-c max_parallel_workers_per_gather=2');
      expect(await setting(url.toString())).toBe('2');
    } finally {
      await target.drop();
    }
  });
});

describe.runIf(ACTIVE_DIALECTS.includes('postgres'))('Postgres pool', () => {
  it('opens at most the pool size of connections (DATABASE_POOL_SIZE), the default without one', async () => {
    const target = await createTestDatabase('postgres');
    // Sessions held at once by more statements than the pool has connections (pg_sleep holds each one: the subject, not
    // a wait).
    const sessionsUnder = async (poolSize: number | undefined, statements: number) => {
      const database = openDatabase(target.url, { poolSize });
      try {
        const pids = await Promise.all(
          Array.from(
            { length: statements },
            async () =>
              (await sql<{ pid: number }>`select pg_backend_pid() as pid, pg_sleep(0.05)`.execute(database.db)).rows[0]
                ?.pid,
          ),
        );
        return new Set(pids).size;
      } finally {
        await database.destroy();
      }
    };
    try {
      expect(await sessionsUnder(3, 12)).toBe(3);
      expect(await sessionsUnder(undefined, DEFAULT_POOL_SIZE + 6)).toBe(DEFAULT_POOL_SIZE);
    } finally {
      await target.drop();
    }
  });
});

describe.runIf(ACTIVE_DIALECTS.includes('postgres'))('Postgres connection errors', () => {
  it('go to the logger, the connection idle or checked out, and the pool carries on', async () => {
    const target = await createTestDatabase('postgres');
    const warnings: { obj: object; msg: string }[] = [];
    const database = openDatabase(target.url, {
      poolSize: 2,
      logger: { warn: (obj, msg) => warnings.push({ obj, msg }) },
    });
    const admin = openDatabase(target.url);
    const backend = async (db: Kysely<Database>) =>
      (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]?.pid;
    const terminate = (pid: number | undefined) => sql`select pg_terminate_backend(${pid})`.execute(admin.db);
    const warned = (count: number) =>
      vi.waitFor(() => expect(warnings.length).toBeGreaterThanOrEqual(count), { timeout: 2_000, interval: 20 });
    try {
      await terminate(await backend(database.db));
      await warned(1);

      await database.db.connection().execute(async (connection) => {
        await terminate(await backend(connection));
        await warned(2);
      });
      expect(
        warnings.every(
          ({ obj, msg }) => (obj as { err?: unknown }).err instanceof Error && /connection failed/.test(msg),
        ),
      ).toBe(true);

      expect(await backend(database.db)).toEqual(expect.any(Number));
      // Each connection's failure reported once.
      expect(warnings).toHaveLength(2);
    } finally {
      await database.destroy();
      await admin.destroy();
      await target.drop();
    }
  });
});
