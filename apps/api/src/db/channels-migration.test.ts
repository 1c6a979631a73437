import { Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { contactsRepository } from '../repositories/contacts.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { TenantScope } from '../repositories/tenant.js';
import { accountsService } from '../services/accounts.js';
import { createTestDatabase } from '../testing/databases.js';
import { ACTIVE_DIALECTS } from '../testing/harness.js';
import { contactRow, conversationRow } from '../testing/rows.js';
import { type DatabaseHandle, openDatabase } from './database.js';
import { migrateToLatest, migrationProvider } from './migrate.js';

const AT = '2026-01-01T00:00:00.000Z';
const migrateTo = (handle: DatabaseHandle, name: string) =>
  new Migrator({ db: handle.db, provider: migrationProvider }).migrateTo(name);

/** What a contact's search finds (the FTS and phone-suffix triggers on SQLite, the trigram indexes on Postgres). */
const search = async (handle: DatabaseHandle, accountId: string, text: string) => {
  const digits = /\d/.test(text) ? text.replace(/\D/g, '') : undefined;
  const found = await contactsRepository.list(
    new TenantScope(handle.db, accountId, handle.capabilities),
    { search: text.toLowerCase(), searchDigits: digits },
    { limit: 20, offset: 0 },
  );
  return found.rows.map((row) => row.id).sort();
};

describe('migration 0013 (channels)', () => {
  for (const dialect of ACTIVE_DIALECTS) {
    it(`keeps every contact, its conversations, searches and counts, lets phone be null, and rolls back [${dialect}]`, async () => {
      const target = await createTestDatabase(dialect);
      const handle = openDatabase(target.url);
      try {
        await migrateTo(handle, '2026_11_25_0012_job_lanes');
        const { id: accountId } = await accountsService.createAccount(
          { database: handle },
          {
            name: 'Before channels',
            plan: 'free',
          },
        );
        await handle.db
          .insertInto('contacts')
          .values([
            contactRow(accountId, { id: 'ct_1', name: 'Martina Tin', phone: '+14155550123', at: AT, tags: ['vip'] }),
            contactRow(accountId, { id: 'ct_2', name: 'Bob Ray', phone: '+447700900555', at: AT }),
          ])
          .execute();
        await handle.db
          .insertInto('conversations')
          .values([
            conversationRow(accountId, { id: 'conv_1', contact_id: 'ct_1', at: AT }),
            conversationRow(accountId, { id: 'conv_2', contact_id: 'ct_2', at: AT }),
          ])
          .execute();

        await migrateToLatest(handle.db);
        const scope = new TenantScope(handle.db, accountId, handle.capabilities);
        expect(
          await handle.db
            .selectFrom('contacts')
            .select(['id', 'phone', 'identities', 'conversation_count'])
            .orderBy('id')
            .execute(),
        ).toEqual([
          { id: 'ct_1', phone: '+14155550123', identities: '[]', conversation_count: 1 },
          { id: 'ct_2', phone: '+447700900555', identities: '[]', conversation_count: 1 },
        ]);
        expect(await search(handle, accountId, 'martina')).toEqual(['ct_1']);
        expect(await search(handle, accountId, '0900555')).toEqual(['ct_2']);
        expect((await conversationsRepository.findById(scope, 'conv_1'))?.channel_id).toBeNull();

        // A contact without a phone, and the triggers still at work on the rebuilt table.
        await handle.db
          .insertInto('contacts')
          .values({
            ...contactRow(accountId, { id: 'ct_3', name: 'Page Visitor', phone: '+10000000000', at: AT }),
            phone: null,
            phone_digits: '',
          })
          .execute();
        await handle.db
          .insertInto('conversations')
          .values(conversationRow(accountId, { id: 'conv_3', contact_id: 'ct_3', at: AT }))
          .execute();
        expect(await search(handle, accountId, 'visitor')).toEqual(['ct_3']);
        expect(
          (
            await handle.db
              .selectFrom('contacts')
              .select('conversation_count')
              .where('id', '=', 'ct_3')
              .executeTakeFirstOrThrow()
          ).conversation_count,
        ).toBe(1);
        // Foreign keys cascade as before: a contact's conversations go with it.
        await handle.db.deleteFrom('contacts').where('id', '=', 'ct_2').execute();
        expect(
          await handle.db.selectFrom('conversations').select('id').where('contact_id', '=', 'ct_2').execute(),
        ).toEqual([]);
        expect(await search(handle, accountId, 'bob')).toEqual([]);

        // Down: contacts without a phone cannot stay; the others can.
        await migrateTo(handle, '2026_11_25_0012_job_lanes');
        expect(await handle.db.selectFrom('contacts').select('id').orderBy('id').execute()).toEqual([{ id: 'ct_1' }]);
        expect(await search(handle, accountId, 'martina')).toEqual(['ct_1']);
        await expect(
          sql`insert into contacts (account_id, id, phone, phone_digits, tags, attributes, created_at, updated_at)
          values (${accountId}, 'ct_4', null, '', '[]', '{}', ${AT}, ${AT})`.execute(handle.db),
        ).rejects.toThrow();
        await migrateToLatest(handle.db);
        expect(await search(handle, accountId, '4155550123')).toEqual(['ct_1']);
      } finally {
        await handle.destroy();
        await target.drop();
      }
    });
  }
});
