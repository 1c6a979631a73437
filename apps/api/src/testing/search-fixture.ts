import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { accountsService } from '../services/accounts.js';
import { type TestDatabase, createTestDatabase } from './databases.js';
import { contactRow, conversationRow } from './rows.js';

/**
 * A migrated throwaway database with one account of 150 "Tinley" contacts (a common match for
 * `tin`) and 50 others, one conversation each, created a minute apart; phones +15551000000 on.
 * For the tests of the search's plans.
 */
export async function createSearchFixture(
  dialect: 'sqlite' | 'postgres',
): Promise<{ target: TestDatabase; database: DatabaseHandle; accountId: string }> {
  const target = await createTestDatabase(dialect);
  const database = openDatabase(target.url);
  await migrateToLatest(database.db);
  const accountId = (await accountsService.createAccount({ database }, { name: 'Plans', plan: 'free' })).id;
  const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();
  for (let i = 0; i < 200; i++) {
    const name = i < 150 ? `Tinley ${i}` : `Other ${i}`;
    await database.db
      .insertInto('contacts')
      .values(contactRow(accountId, { id: `ct_${i}`, name, phone: `+1555${1_000_000 + i}`, at: at(i) }))
      .execute();
    await database.db
      .insertInto('conversations')
      .values(conversationRow(accountId, { id: `conv_${i}`, contact_id: `ct_${i}`, at: at(i) }))
      .execute();
  }
  return { target, database, accountId };
}
