import { Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { accountsService } from '../services/accounts.js';
import { ordersService } from '../services/orders.js';
import { createTestDatabase } from '../testing/databases.js';
import { ACTIVE_DIALECTS, testSettings } from '../testing/harness.js';
import { openDatabase } from './database.js';
import { migrateToLatest, migrationProvider } from './migrate.js';

for (const dialect of ACTIVE_DIALECTS) {
  describe(`migration 0010, order number keys [${dialect}]`, () => {
    it('keys the all-digits numbers of existing orders, and numbering counts on from the highest', async () => {
      const target = await createTestDatabase(dialect);
      const database = openDatabase(target.url);
      try {
        const migrator = new Migrator({ db: database.db, provider: migrationProvider });
        expect((await migrator.migrateTo('2026_11_23_0009_phone_digit_suffixes')).error).toBeUndefined();
        const account = await accountsService.createAccount({ database }, { name: 'Before', plan: 'free' });
        const at = '2026-01-01T00:00:00.000Z';
        await sql`insert into contacts (account_id, id, name, name_search, phone, phone_digits, email, email_search, tags, attributes, created_at, updated_at)
          values (${account.id}, 'ct_1', null, null, '+15550000001', '15550000001', null, null, '[]', '{}', ${at}, ${at})`.execute(
          database.db,
        );
        const numbers = ['1001', '007', 'A-17', '12345678901234567890', ''];
        for (const [i, number] of numbers.entries()) {
          if (number === '') continue;
          await sql`insert into orders (account_id, id, contact_id, number, number_value, status, currency, total_amount, items, placed_at, created_at, updated_at)
            values (${account.id}, ${`ord_${i}`}, 'ct_1', ${number}, null, 'paid', 'USD', 100, '[]', ${at}, ${at}, ${at})`.execute(
            database.db,
          );
        }
        await migrateToLatest(database.db);

        const keys = await sql<{
          number: string;
          number_key: string | null;
        }>`select number, number_key from orders order by id`.execute(database.db);
        expect(keys.rows).toEqual([
          { number: '1001', number_key: '1001'.padStart(64, '0') },
          { number: '007', number_key: '7'.padStart(64, '0') },
          { number: 'A-17', number_key: null },
          { number: '12345678901234567890', number_key: '12345678901234567890'.padStart(64, '0') },
        ]);
        const next = await ordersService.create(
          { database, accountId: account.id, settings: testSettings() },
          {
            contact_id: 'ct_1',
            currency: 'USD',
            items: [{ name: 'Mug', quantity: 1, unit_amount: 100 }],
            status: 'pending',
          },
        );
        expect(next.number).toBe('12345678901234567891');
      } finally {
        await database.destroy();
        await target.drop();
      }
    });
  });
}
