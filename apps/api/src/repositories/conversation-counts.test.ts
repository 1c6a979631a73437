import { sql } from 'kysely';
import { Migrator } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.js';
import { migrateToLatest, migrationProvider } from '../db/migrate.js';
import { accountsService } from '../services/accounts.js';
import { createTestDatabase } from '../testing/databases.js';
import { contactRow, conversationRow } from '../testing/rows.js';
import { ACTIVE_DIALECTS, type TestServer, describeEachDialect } from '../testing/harness.js';
import type { Executor } from './tenant.js';

const STATUSES = ['active', 'resolved', 'archived'] as const;
const PLATFORMS = ['whatsapp', 'facebook', 'instagram'] as const;

/** What the triggers keep, and what counting the conversations gives, per account, status and platform. */
async function keptAndCounted(db: Executor) {
  const kept = await db.selectFrom('conversation_counts').select(['account_id', 'status', 'platform', 'count']).where('count', '!=', 0).orderBy('account_id').orderBy('status').orderBy('platform').execute();
  const counted = await db
    .selectFrom('conversations')
    .select(['account_id', 'status', 'platform', sql<number>`count(*)`.as('count')])
    .groupBy(['account_id', 'status', 'platform'])
    .orderBy('account_id')
    .orderBy('status')
    .orderBy('platform')
    .execute();
  return { kept: kept.map((r) => ({ ...r, count: Number(r.count) })), counted: counted.map((r) => ({ ...r, count: Number(r.count) })) };
}

/** Each contact's `conversation_count` (migration 0007), and its conversations counted. */
async function perContactKeptAndCounted(db: Executor) {
  const kept = await db.selectFrom('contacts').select(['account_id', 'id', 'conversation_count']).orderBy('account_id').orderBy('id').execute();
  const counted = await db
    .selectFrom('contacts')
    .select((eb) => [
      'contacts.account_id',
      'contacts.id',
      eb
        .selectFrom('conversations')
        .select(sql<number>`count(*)`.as('n'))
        .whereRef('conversations.account_id', '=', 'contacts.account_id')
        .whereRef('conversations.contact_id', '=', 'contacts.id')
        .as('conversation_count'),
    ])
    .orderBy('contacts.account_id')
    .orderBy('contacts.id')
    .execute();
  const numbers = (rows: { conversation_count: unknown }[]) => rows.map((r) => ({ ...r, conversation_count: Number(r.conversation_count) }));
  return { kept: numbers(kept), counted: numbers(counted) };
}

describeEachDialect('conversation counts (per account, status and platform; per contact) kept by triggers', (server: () => TestServer) => {
  it('follow creation, status changes and cascaded deletes, and give every filter its exact total', async () => {
    const s = server();
    const contacts: string[] = [];
    for (let i = 0; i < 4; i++) contacts.push((await s.request('POST', '/contacts', { body: { phone: `+1415555${String(1000 + i)}` } })).body.id);
    const other = (await s.request('POST', '/contacts', { key: s.keys.otherFull, body: { phone: '+14155559999' } })).body.id;
    const conversations: string[] = [];
    for (let i = 0; i < 18; i++) {
      const created = await s.request('POST', '/conversations', { body: { contact_id: contacts[i % 4], platform: PLATFORMS[i % 3] } });
      expect(created.status).toBe(201);
      conversations.push(created.body.id);
    }
    await s.request('POST', '/conversations', { key: s.keys.otherFull, body: { contact_id: other, platform: 'whatsapp' } });
    for (const [i, id] of conversations.entries()) {
      if (i % 3 === 1) expect((await s.request('PATCH', `/conversations/${id}`, { body: { status: 'resolved' } })).status).toBe(200);
      if (i % 4 === 2) expect((await s.request('PATCH', `/conversations/${id}`, { body: { status: 'archived' } })).status).toBe(200);
      // Setting the current status changes nothing.
      if (i % 5 === 0) await s.request('PATCH', `/conversations/${id}`, { body: { status: 'active' } });
    }
    // A resolved conversation reopened by a reply, then a contact deleted with its conversations.
    const inbound = await s.request('POST', '/sandbox/inbound', { body: { platform: 'facebook', from: { phone: '+14155551001' }, content: 'Hi again' } });
    expect(inbound.status).toBeLessThan(300);
    expect((await s.request('DELETE', `/contacts/${contacts[3]}`)).status).toBe(204);

    const { kept, counted } = await keptAndCounted(s.database.db);
    expect(kept).toEqual(counted);
    const perContact = await perContactKeptAndCounted(s.database.db);
    expect(perContact.counted.filter((c) => c.conversation_count > 0).length).toBe(4);
    expect(perContact.kept).toEqual(perContact.counted);

    // A search's total is the sum of its contacts' counts: the same as the conversations it lists.
    const phoneSearch = await s.request('GET', '/conversations', { query: { search: '41555510', limit: 100 } });
    expect(phoneSearch.body.total).toBe(phoneSearch.body.data.length);
    expect(phoneSearch.body.total).toBeGreaterThan(0);

    // Each filter's total is the number of rows it lists.
    for (const status of [undefined, ...STATUSES]) {
      for (const platform of [undefined, ...PLATFORMS]) {
        const listed = await s.request('GET', '/conversations', { query: { status, platform, limit: 100 } });
        expect(listed.status).toBe(200);
        expect(listed.body.total).toBe(listed.body.data.length);
      }
    }
  });
});

/** Contact `ct_1` of the account, written directly (any schema version since 0001). */
const insertContact = (db: Executor, accountId: string, at: string) =>
  db.insertInto('contacts').values(contactRow(accountId, { id: 'ct_1', name: null, phone: '+14155550000', at })).execute();

describe('conversation counts of existing data', () => {
  for (const dialect of ACTIVE_DIALECTS) {
    it(`are filled by the migration from the conversations already there [${dialect}]`, async () => {
      const target = await createTestDatabase(dialect);
      const database = openDatabase(target.url);
      try {
        const migrator = new Migrator({ db: database.db, provider: migrationProvider });
        const before = await migrator.migrateTo('2026_11_22_0005_unlogged_rate_limits');
        expect(before.error).toBeUndefined();
        const account = await accountsService.createAccount(database, { name: 'Before', plan: 'free' });
        const at = '2026-01-01T00:00:00.000Z';
        await insertContact(database.db, account.id, at);
        const rows = [...Array(7).keys()].map((i) =>
          conversationRow(account.id, { id: `conv_${i}`, contact_id: 'ct_1', at, platform: PLATFORMS[i % 3] as (typeof PLATFORMS)[number], status: STATUSES[i % 2] as (typeof STATUSES)[number] }),
        );
        await database.db.insertInto('conversations').values(rows).execute();
        await migrateToLatest(database.db);
        const { kept, counted } = await keptAndCounted(database.db);
        expect(counted.reduce((sum, r) => sum + r.count, 0)).toBe(7);
        expect(kept).toEqual(counted);
        const perContact = await perContactKeptAndCounted(database.db);
        expect(perContact.kept).toEqual([{ account_id: account.id, id: 'ct_1', conversation_count: 7 }]);
      } finally {
        await database.destroy();
        await target.drop();
      }
    });
  }

  for (const dialect of ACTIVE_DIALECTS) {
    it(`migration 0007 rolls back and applies again, counts refilled [${dialect}]`, async () => {
      const target = await createTestDatabase(dialect);
      const database = openDatabase(target.url);
      try {
        await migrateToLatest(database.db);
        const account = await accountsService.createAccount(database, { name: 'Down', plan: 'free' });
        const at = '2026-01-01T00:00:00.000Z';
        await insertContact(database.db, account.id, at);
        const migrator = new Migrator({ db: database.db, provider: migrationProvider });
        const down = await migrator.migrateTo('2026_11_22_0006_conversation_counts');
        expect(down.error).toBeUndefined();
        // Conversations written while 0007 is not there are counted when it comes back.
        await database.db
          .insertInto('conversations')
          .values([0, 1].map((i) => conversationRow(account.id, { id: `conv_${i}`, contact_id: 'ct_1', at })))
          .execute();
        await migrateToLatest(database.db);
        expect((await perContactKeptAndCounted(database.db)).kept).toEqual([{ account_id: account.id, id: 'ct_1', conversation_count: 2 }]);
        await database.db.deleteFrom('conversations').where('id', '=', 'conv_0').execute();
        expect((await perContactKeptAndCounted(database.db)).kept).toEqual([{ account_id: account.id, id: 'ct_1', conversation_count: 1 }]);
      } finally {
        await database.destroy();
        await target.drop();
      }
    });
  }
});
