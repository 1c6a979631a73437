import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTIVE_DIALECTS } from '../testing/harness.js';
import { type TestDatabase, createTestDatabase } from '../testing/databases.js';
import { contactContains } from '../repositories/contact-search.js';
import { type DatabaseHandle, openDatabase } from './database.js';
import { migrateToLatest } from './migrate.js';

const withParameter = (url: string, name: string, value: string): string => {
  const parsed = new URL(url);
  parsed.searchParams.set(name, value);
  return parsed.toString();
};

/** The statements prepared on the connection that runs this (pg_prepared_statements is per session). */
const preparedHere = (database: DatabaseHandle) =>
  database.db.connection().execute(async (db) => {
    await sql`select ${1}::int as one`.execute(db);
    await sql`select ${2}::int as two`.execute(db);
    return (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db)).rows.map(
      (row) => row.statement,
    );
  });

describe.runIf(ACTIVE_DIALECTS.includes('postgres'))('Postgres prepared statements', () => {
  let target: TestDatabase;
  beforeAll(async () => {
    target = await createTestDatabase('postgres');
  });
  afterAll(async () => {
    await target.drop();
  });

  it('name each statement with parameters, so Postgres plans it once per connection', async () => {
    const database = openDatabase(target.url);
    try {
      expect(database.preparedStatements).toBe(true);
      expect(await preparedHere(database)).toEqual(
        expect.arrayContaining(['select $1::int as one', 'select $1::int as two']),
      );
    } finally {
      await database.destroy();
    }
  });

  it('are off with prepared_statements=false in the URL (a transaction-mode pooler), which pg never sees', async () => {
    const database = openDatabase(withParameter(target.url, 'prepared_statements', 'false'));
    try {
      expect(database.preparedStatements).toBe(false);
      expect(await preparedHere(database)).toEqual([]);
      expect(database.pgPool?.options.connectionString).not.toContain('prepared_statements');
    } finally {
      await database.destroy();
    }
  });

  it('leave a search too short for the trigram indexes unnamed, planned for its pattern every time', async () => {
    const database = openDatabase(target.url, { poolSize: 1 });
    try {
      await migrateToLatest(database.db);
      const search = (fragment: string) =>
        database.db
          .selectFrom('contacts')
          .select('id')
          .where(contactContains(database.capabilities, [{ columns: ['name_search'], fragment }]))
          .execute();
      for (let run = 0; run < 8; run++) {
        await search('ab');
        await search('abc');
      }
      const named = (
        await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(database.db)
      ).rows.map((row) => row.statement);
      expect(named.filter((statement) => statement.includes('"name_search" like'))).toEqual([
        expect.stringContaining('like (select $1::text)'),
      ]);
    } finally {
      await database.destroy();
    }
  });

  it('survive an ALTER that changes their columns: the statement runs again, the connection is replaced', async () => {
    const database = openDatabase(target.url, { poolSize: 1 });
    const admin = openDatabase(withParameter(target.url, 'prepared_statements', 'false'));
    try {
      await sql`create table rolling (id int primary key, a text)`.execute(admin.db);
      await sql`insert into rolling values (1, 'x')`.execute(admin.db);
      const read = () =>
        database.db
          .selectFrom('rolling' as never)
          .selectAll()
          .where('id' as never, '=', 1 as never)
          .execute();
      expect(await read()).toEqual([{ id: 1, a: 'x' }]);

      await sql`alter table rolling add column b text default 'y'`.execute(admin.db);
      expect(await read()).toEqual([{ id: 1, a: 'x', b: 'y' }]);
      const backend = async () =>
        (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(database.db)).rows[0]?.pid;
      const before = await backend();
      expect(await read()).toEqual([{ id: 1, a: 'x', b: 'y' }]);

      // Inside a transaction the refusal aborts it; the connection is still replaced afterwards.
      await sql`alter table rolling add column c text default 'z'`.execute(admin.db);
      await expect(
        database.db.transaction().execute((trx) =>
          trx
            .selectFrom('rolling' as never)
            .selectAll()
            .where('id' as never, '=', 1 as never)
            .execute(),
        ),
      ).rejects.toThrow(/cached plan must not change result type/);
      expect(await backend()).not.toBe(before);
      expect(await read()).toEqual([{ id: 1, a: 'x', b: 'y', c: 'z' }]);
    } finally {
      await sql`drop table if exists rolling`.execute(admin.db);
      await admin.destroy();
      await database.destroy();
    }
  });
});
