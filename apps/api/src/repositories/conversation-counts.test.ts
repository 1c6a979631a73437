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
  const kept = await db
    .selectFrom('conversation_counts')
    .select(['account_id', 'status', 'platform', 'count'])
    .where('count', '!=', 0)
    .orderBy('account_id')
    .orderBy('status')
    .orderBy('platform')
    .execute();
  const counted = await db
    .selectFrom('conversations')
    .select(['account_id', 'status', 'platform', sql<number>`count(*)`.as('count')])
    .groupBy(['account_id', 'status', 'platform'])
    .orderBy('account_id')
    .orderBy('status')
    .orderBy('platform')
    .execute();
  return {
    kept: kept.map((r) => ({ ...r, count: Number(r.count) })),
    counted: counted.map((r) => ({ ...r, count: Number(r.count) })),
  };
}

/** Each contact's `conversation_count` (migration 0007), and its conversations counted. */
async function perContactKeptAndCounted(db: Executor) {
  const kept = await db
    .selectFrom('contacts')
    .select(['account_id', 'id', 'conversation_count'])
    .orderBy('account_id')
    .orderBy('id')
    .execute();
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
  const numbers = (rows: { conversation_count: unknown }[]) =>
    rows.map((r) => ({ ...r, conversation_count: Number(r.conversation_count) }));
  return { kept: numbers(kept), counted: numbers(counted) };
}

/** The distinct trigrams of a lower-cased name, as migration 0008 counts them (by character). */
const trigramsOf = (name: string | null) => {
  const chars = [...(name ?? '')];
  return new Set(chars.slice(0, Math.max(0, chars.length - 2)).map((_, i) => chars.slice(i, i + 3).join('')));
};

/**
 * Migration 0008's `conversation_name_trigrams` (zeros left out), and the same counted from the
 * conversations and their contacts' names; and whether every conversation's copy of its contact's
 * name is the contact's.
 */
async function trigramsKeptAndCounted(db: Executor) {
  const kept = await db
    .selectFrom('conversation_name_trigrams')
    .select(['account_id', 'trigram', 'conversations'])
    .where('conversations', '!=', 0)
    .execute();
  const rows = await db
    .selectFrom('conversations')
    .innerJoin('contacts', (join) =>
      join
        .onRef('contacts.account_id', '=', 'conversations.account_id')
        .onRef('contacts.id', '=', 'conversations.contact_id'),
    )
    .select(['conversations.account_id', 'conversations.contact_name_search as copy', 'contacts.name_search'])
    .execute();
  const counted = new Map<string, number>();
  for (const row of rows)
    for (const trigram of trigramsOf(row.name_search))
      counted.set(`${row.account_id} ${trigram}`, (counted.get(`${row.account_id} ${trigram}`) ?? 0) + 1);
  const sorted = (entries: [string, number][]) => entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    kept: sorted(kept.map((r) => [`${r.account_id} ${r.trigram}`, Number(r.conversations)])),
    counted: sorted([...counted]),
    stale: rows.filter((r) => r.copy !== r.name_search),
  };
}

describeEachDialect(
  'conversation counts (per account, status and platform; per contact) kept by triggers',
  (server: () => TestServer) => {
    it('follow creation, status changes and cascaded deletes, and give every filter its exact total', async () => {
      const s = server();
      const contacts: string[] = [];
      for (let i = 0; i < 4; i++)
        contacts.push(
          (await s.request('POST', '/contacts', { body: { phone: `+1415555${String(1000 + i)}` } })).body.id,
        );
      const other = (await s.request('POST', '/contacts', { key: s.keys.otherFull, body: { phone: '+14155559999' } }))
        .body.id;
      const conversations: string[] = [];
      for (let i = 0; i < 18; i++) {
        const created = await s.request('POST', '/conversations', {
          body: { contact_id: contacts[i % 4], platform: PLATFORMS[i % 3] },
        });
        expect(created.status).toBe(201);
        conversations.push(created.body.id);
      }
      await s.request('POST', '/conversations', {
        key: s.keys.otherFull,
        body: { contact_id: other, platform: 'whatsapp' },
      });
      for (const [i, id] of conversations.entries()) {
        if (i % 3 === 1)
          expect((await s.request('PATCH', `/conversations/${id}`, { body: { status: 'resolved' } })).status).toBe(200);
        if (i % 4 === 2)
          expect((await s.request('PATCH', `/conversations/${id}`, { body: { status: 'archived' } })).status).toBe(200);
        // Setting the current status changes nothing.
        if (i % 5 === 0) await s.request('PATCH', `/conversations/${id}`, { body: { status: 'active' } });
      }
      // A resolved conversation reopened by a reply, then a contact deleted with its conversations.
      const inbound = await s.request('POST', '/sandbox/inbound', {
        body: { platform: 'facebook', from: { phone: '+14155551001' }, content: 'Hi again' },
      });
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

    it("keep each trigram of the contacts' names counted through renames, moves and deletes, and a three-character search's total", async () => {
      const s = server();
      const names = ['Martina Tin', 'Tina Ötinger', 'Valentin', 'Al', 'Kristin Tin'];
      const contacts: string[] = [];
      for (const [i, name] of names.entries())
        contacts.push(
          (await s.request('POST', '/contacts', { body: { name, phone: `+1415555${String(2000 + i)}` } })).body.id,
        );
      const other = (
        await s.request('POST', '/contacts', { key: s.keys.otherFull, body: { name: 'Tintin', phone: '+14155559998' } })
      ).body.id;
      const conversations: string[] = [];
      for (let i = 0; i < 12; i++)
        conversations.push(
          (
            await s.request('POST', '/conversations', {
              body: { contact_id: contacts[i % 5], platform: PLATFORMS[i % 3] },
            })
          ).body.id,
        );
      await s.request('POST', '/conversations', {
        key: s.keys.otherFull,
        body: { contact_id: other, platform: 'whatsapp' },
      });
      const check = async (step: string) => {
        const { kept, counted, stale } = await trigramsKeptAndCounted(s.database.db);
        expect(stale, step).toEqual([]);
        expect(kept, step).toEqual(counted);
        // A three-character search's total is its trigram's row: the same as the conversations it lists.
        for (const search of ['tin', 'ina', 'öti', 'n t', 'al']) {
          const listed = await s.request('GET', '/conversations', { query: { search, limit: 100 } });
          expect(listed.status, step).toBe(200);
          expect(listed.body.total, `${step}: ${search}`).toBe(listed.body.data.length);
          expect(
            listed.body.data.every((c: { contact: { name: string } }) => c.contact.name.toLowerCase().includes(search)),
            `${step}: ${search}`,
          ).toBe(true);
        }
      };
      await check('created');
      expect(counted('tin', await trigramsKeptAndCounted(s.database.db))).toBeGreaterThan(0);
      // Renamed: its conversations' copies follow, the counts move; to no name and back.
      expect((await s.request('PATCH', `/contacts/${contacts[2]}`, { body: { name: 'Valentina' } })).status).toBe(200);
      await check('renamed');
      expect((await s.request('PATCH', `/contacts/${contacts[1]}`, { body: { name: null } })).status).toBe(200);
      await check('name removed');
      expect((await s.request('PATCH', `/contacts/${contacts[1]}`, { body: { name: 'Ötinger' } })).status).toBe(200);
      await check('name given');
      // A conversation moved to another contact (no API does it; the triggers follow any writer).
      await s.database.db
        .updateTable('conversations')
        .set({ contact_id: contacts[3] as string })
        .where('id', '=', conversations[0] as string)
        .execute();
      await check('moved');
      // Deleted: one conversation, then a contact with its conversations (a cascade).
      await s.database.db
        .deleteFrom('conversations')
        .where('id', '=', conversations[1] as string)
        .execute();
      await check('conversation deleted');
      expect((await s.request('DELETE', `/contacts/${contacts[0]}`)).status).toBe(204);
      await check('contact deleted');
      // The other account's counts are its own.
      const { kept } = await trigramsKeptAndCounted(s.database.db);
      expect(kept.filter(([key]) => key.endsWith(' tin')).length).toBe(2);
    });
  },
);

/** A trigram's kept count in one account's rows of trigramsKeptAndCounted (the first account that has it). */
const counted = (trigram: string, { kept }: { kept: [string, number][] }) =>
  kept.find(([key]) => key.endsWith(` ${trigram}`))?.[1] ?? 0;

/** Contact `ct_1` of the account, written directly (any schema version since 0001). */
const insertContact = (db: Executor, accountId: string, at: string) =>
  db
    .insertInto('contacts')
    .values(contactRow(accountId, { id: 'ct_1', name: null, phone: '+14155550000', at }))
    .execute();

describe('conversation counts of existing data', () => {
  for (const dialect of ACTIVE_DIALECTS) {
    it(`are filled by the migration from the conversations already there [${dialect}]`, async () => {
      const target = await createTestDatabase(dialect);
      const database = openDatabase(target.url);
      try {
        const migrator = new Migrator({ db: database.db, provider: migrationProvider });
        const before = await migrator.migrateTo('2026_11_22_0005_unlogged_rate_limits');
        expect(before.error).toBeUndefined();
        const account = await accountsService.createAccount({ database }, { name: 'Before', plan: 'free' });
        const at = '2026-01-01T00:00:00.000Z';
        await insertContact(database.db, account.id, at);
        const rows = [...Array(7).keys()].map((i) =>
          conversationRow(account.id, {
            id: `conv_${i}`,
            contact_id: 'ct_1',
            at,
            platform: PLATFORMS[i % 3] as (typeof PLATFORMS)[number],
            status: STATUSES[i % 2] as (typeof STATUSES)[number],
          }),
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
        const account = await accountsService.createAccount({ database }, { name: 'Down', plan: 'free' });
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
        expect((await perContactKeptAndCounted(database.db)).kept).toEqual([
          { account_id: account.id, id: 'ct_1', conversation_count: 2 },
        ]);
        await database.db.deleteFrom('conversations').where('id', '=', 'conv_0').execute();
        expect((await perContactKeptAndCounted(database.db)).kept).toEqual([
          { account_id: account.id, id: 'ct_1', conversation_count: 1 },
        ]);
      } finally {
        await database.destroy();
        await target.drop();
      }
    });
  }
  for (const dialect of ACTIVE_DIALECTS) {
    it(`migration 0008 copies names and counts trigrams of the conversations already there, rolls back and applies again [${dialect}]`, async () => {
      const target = await createTestDatabase(dialect);
      const database = openDatabase(target.url);
      try {
        const migrator = new Migrator({ db: database.db, provider: migrationProvider });
        expect((await migrator.migrateTo('2026_11_22_0007_contact_conversation_counts')).error).toBeUndefined();
        const account = await accountsService.createAccount({ database }, { name: 'Before', plan: 'free' });
        const at = '2026-01-01T00:00:00.000Z';
        await database.db
          .insertInto('contacts')
          .values([
            contactRow(account.id, { id: 'ct_1', name: 'Martina Tin', phone: '+14155550000', at }),
            contactRow(account.id, { id: 'ct_2', name: null, phone: '+14155550001', at }),
          ])
          .execute();
        const rows = [0, 1, 2].map((i) =>
          conversationRow(account.id, { id: `conv_${i}`, contact_id: i < 2 ? 'ct_1' : 'ct_2', at }),
        );
        await database.db.insertInto('conversations').values(rows).execute();
        await migrateToLatest(database.db);
        const filled = await trigramsKeptAndCounted(database.db);
        expect(filled.stale).toEqual([]);
        expect(filled.kept).toEqual(filled.counted);
        expect(counted('tin', filled)).toBe(2);

        expect((await migrator.migrateTo('2026_11_22_0007_contact_conversation_counts')).error).toBeUndefined();
        // Written while 0008 is not there: counted when it comes back.
        await database.db
          .insertInto('conversations')
          .values(conversationRow(account.id, { id: 'conv_3', contact_id: 'ct_1', at }))
          .execute();
        await database.db
          .updateTable('contacts')
          .set({ name: 'Tina', name_search: 'tina' })
          .where('id', '=', 'ct_2')
          .execute();
        await migrateToLatest(database.db);
        const again = await trigramsKeptAndCounted(database.db);
        expect(again.stale).toEqual([]);
        expect(again.kept).toEqual(again.counted);
        expect(counted('tin', again)).toBe(4);
      } finally {
        await database.destroy();
        await target.drop();
      }
    });
  }
});
