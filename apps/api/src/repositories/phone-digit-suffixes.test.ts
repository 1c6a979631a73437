import { Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest, migrationProvider } from '../db/migrate.js';
import { accountsService } from '../services/accounts.js';
import { createTestDatabase } from '../testing/databases.js';
import { ACTIVE_DIALECTS } from '../testing/harness.js';
import { contactRow } from '../testing/rows.js';
import { contactsRepository } from './contacts.js';
import { conversationsRepository } from './conversations.js';
import { TenantScope } from './tenant.js';

const AT = '2026-01-01T00:00:00.000Z';

/** Every suffix of three digits or more of each contact's phone, as migration 0009 keeps them (SQLite). */
async function keptAndExpected(handle: DatabaseHandle) {
  const kept = (
    await sql<{
      suffix: string;
      id: string;
    }>`select s.suffix, c.id from contact_phone_suffixes s join contacts c on c.rowid = s.contact_rowid`.execute(
      handle.db,
    )
  ).rows;
  const contacts = await handle.db.selectFrom('contacts').select(['id', 'phone_digits']).execute();
  const expected = contacts.flatMap(({ id, phone_digits }) =>
    [...Array(Math.max(0, phone_digits.length - 2)).keys()].map((i) => ({ suffix: phone_digits.slice(i), id })),
  );
  const order = (rows: { suffix: string; id: string }[]) => rows.map((r) => `${r.suffix} ${r.id}`).sort();
  const orphans = (
    await sql<{
      n: number;
    }>`select count(*) as n from contact_phone_suffixes where contact_rowid not in (select rowid from contacts)`.execute(
      handle.db,
    )
  ).rows[0]?.n;
  return { kept: order(kept), expected: order(expected), orphans: Number(orphans) };
}

/** The columns of SQLite's FTS search table. */
const searchTableColumns = async (handle: DatabaseHandle) =>
  (await sql<{ name: string }>`select name from pragma_table_info('contacts_search')`.execute(handle.db)).rows.map(
    (r) => r.name,
  );

async function withDatabase(dialect: 'sqlite' | 'postgres', run: (handle: DatabaseHandle) => Promise<void>) {
  const target = await createTestDatabase(dialect);
  const handle = openDatabase(target.url);
  try {
    await run(handle);
  } finally {
    await handle.destroy();
    await target.drop();
  }
}

const phoneSearch = async (handle: DatabaseHandle, accountId: string, digits: string) => {
  const scope = new TenantScope(handle.db, accountId, handle.capabilities);
  const contacts = await contactsRepository.list(
    scope,
    { search: digits, searchDigits: digits },
    { limit: 20, offset: 0 },
  );
  return contacts.rows.map((r) => r.id).sort();
};

describe('phone digit suffixes (migration 0009, SQLite)', () => {
  it('keep every suffix of three digits or more of each phone through inserts, phone changes, other changes and deletes', async () => {
    await withDatabase('sqlite', async (handle) => {
      await migrateToLatest(handle.db);
      const { id: accountId } = await accountsService.createAccount(
        { database: handle },
        { name: 'Suffixes', plan: 'free' },
      );
      await handle.db
        .insertInto('contacts')
        .values([
          contactRow(accountId, { id: 'ct_1', name: 'Ana', phone: '+14155550123', at: AT }),
          contactRow(accountId, { id: 'ct_2', name: 'Ben', phone: '+447700900555', at: AT }),
          contactRow(accountId, { id: 'ct_3', name: 'Cy', phone: '+491511234567890', at: AT }),
        ])
        .execute();
      let state = await keptAndExpected(handle);
      expect(state.kept).toHaveLength(9 + 10 + 13);
      expect(state.kept).toEqual(state.expected);

      await handle.db
        .updateTable('contacts')
        .set({ phone: '+5511987654321', phone_digits: '5511987654321' })
        .where('id', '=', 'ct_1')
        .execute();
      await handle.db
        .updateTable('contacts')
        .set({ name: 'Benjamin', name_search: 'benjamin' })
        .where('id', '=', 'ct_2')
        .execute();
      await handle.db.deleteFrom('contacts').where('id', '=', 'ct_3').execute();
      state = await keptAndExpected(handle);
      expect(state.kept).toEqual(state.expected);
      expect(state.orphans).toBe(0);

      // Any run of three digits or more of a phone finds it: its start, middle and end.
      expect(await phoneSearch(handle, accountId, '551')).toEqual(['ct_1']);
      expect(await phoneSearch(handle, accountId, '98765')).toEqual(['ct_1']);
      expect(await phoneSearch(handle, accountId, '4321')).toEqual(['ct_1']);
      expect(await phoneSearch(handle, accountId, '555')).toEqual(['ct_2']);
      expect(await phoneSearch(handle, accountId, '4155550123')).toEqual([]);
      expect(await phoneSearch(handle, accountId, '1234567890')).toEqual([]);
    });
  });

  it('are filled from the contacts already there; the search table drops the digits, and gets them back on the way down', async () => {
    await withDatabase('sqlite', async (handle) => {
      const migrator = new Migrator({ db: handle.db, provider: migrationProvider });
      expect((await migrator.migrateTo('2026_11_22_0008_conversation_name_trigrams')).error).toBeUndefined();
      expect(await searchTableColumns(handle)).toEqual(['name_search', 'email_search', 'phone_digits']);
      const { id: accountId } = await accountsService.createAccount(
        { database: handle },
        { name: 'Before', plan: 'free' },
      );
      await handle.db
        .insertInto('contacts')
        .values([
          contactRow(accountId, { id: 'ct_1', name: 'Room 7700', phone: '+14155550123', at: AT }),
          contactRow(accountId, { id: 'ct_2', name: 'Dee', phone: '+447700900123', at: AT }),
        ])
        .execute();

      await migrateToLatest(handle.db);
      expect(await searchTableColumns(handle)).toEqual(['name_search', 'email_search']);
      const state = await keptAndExpected(handle);
      expect(state.kept).toHaveLength(9 + 10);
      expect(state.kept).toEqual(state.expected);
      // Digits in a name still come from the search table, digits of a phone from the suffixes.
      expect(await phoneSearch(handle, accountId, '7700')).toEqual(['ct_1', 'ct_2']);
      expect(await phoneSearch(handle, accountId, '0123')).toEqual(['ct_1', 'ct_2']);

      expect((await migrator.migrateTo('2026_11_22_0008_conversation_name_trigrams')).error).toBeUndefined();
      expect(await searchTableColumns(handle)).toEqual(['name_search', 'email_search', 'phone_digits']);
      expect(
        (await sql`select name from sqlite_schema where name like 'contact_phone_suffixes%'`.execute(handle.db)).rows,
      ).toEqual([]);
      // Without the suffixes, the search table holds the digits again, and its triggers keep them.
      await handle.db
        .insertInto('contacts')
        .values(contactRow(accountId, { id: 'ct_3', name: 'Eve', phone: '+33612345678', at: AT }))
        .execute();
      const matching = async (query: string) =>
        (
          await sql<{
            id: string;
          }>`select id from contacts where rowid in (select rowid from contacts_search where contacts_search match ${query}) order by id`.execute(
            handle.db,
          )
        ).rows.map((r) => r.id);
      expect(await matching('{phone_digits} : "612345"')).toEqual(['ct_3']);
      expect(await matching('{name_search phone_digits} : "7700"')).toEqual(['ct_1', 'ct_2']);

      await migrateToLatest(handle.db);
      const again = await keptAndExpected(handle);
      expect(again.kept).toEqual(again.expected);
      expect(await phoneSearch(handle, accountId, '612345')).toEqual(['ct_3']);
    });
  });
});

describe('searches take their fragment literally', () => {
  for (const dialect of ACTIVE_DIALECTS) {
    it(`a fragment with double quotes, FTS5 syntax or LIKE wildcards finds just the names that hold it [${dialect}]`, async () => {
      await withDatabase(dialect, async (handle) => {
        await migrateToLatest(handle.db);
        const { id: accountId } = await accountsService.createAccount(
          { database: handle },
          { name: 'Literal', plan: 'free' },
        );
        const names = ['Jo "Big" Ox', 'Big Ox', 'Al {name} : x', 'Ann OR Bob', 'Ann Bob'];
        await handle.db
          .insertInto('contacts')
          .values(
            names.map((name, i) => contactRow(accountId, { id: `ct_${i}`, name, phone: `+1415555010${i}`, at: AT })),
          )
          .execute();
        const scope = new TenantScope(handle.db, accountId, handle.capabilities);
        const found = async (search: string) => {
          const contacts = (await contactsRepository.list(scope, { search }, { limit: 20, offset: 0 })).rows.map(
            (r) => r.name,
          );
          const conversations = await conversationsRepository.list(scope, { search }, { limit: 20, offset: 0 });
          expect(conversations.total, search).toBe(0);
          return contacts.sort();
        };
        expect(await found('"big"')).toEqual(['Jo "Big" Ox']);
        expect(await found('big" ox')).toEqual(['Jo "Big" Ox']);
        expect(await found('{name} :')).toEqual(['Al {name} : x']);
        expect(await found('ann or')).toEqual(['Ann OR Bob']);
        expect(await found('n_b')).toEqual([]);
      });
    });
  }
});
