import { Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.js';
import { migrateToLatest, migrationProvider } from '../db/migrate.js';
import { accountsService } from '../services/accounts.js';
import { createTestDatabase } from '../testing/databases.js';
import { ACTIVE_DIALECTS, type TestServer, describeEachDialect } from '../testing/harness.js';
import { contactRow } from '../testing/rows.js';
import type { Executor } from './tenant.js';

const entry = (accountId: string, tag: string, contacts: unknown) => `${accountId} ${tag} ${Number(contacts)}`;

/** Migration 0018's counters (zeros left out), and the same counted from contact_tags and from contacts' `tags`. */
async function keptAndCounted(db: Executor) {
  const counters = db.selectFrom('contact_tag_counts').where('contacts', '!=', 0);
  const kept = await counters.select(['account_id', 'tag', 'contacts']).execute();
  const indexed = await db
    .selectFrom('contact_tags')
    .select(['account_id', 'tag', sql<number>`count(*)`.as('contacts')])
    .groupBy(['account_id', 'tag'])
    .execute();
  const fromContacts = new Map<string, number>();
  for (const contact of await db.selectFrom('contacts').select(['account_id', 'tags']).execute()) {
    for (const tag of JSON.parse(contact.tags) as string[]) {
      const key = `${contact.account_id} ${tag}`;
      fromContacts.set(key, (fromContacts.get(key) ?? 0) + 1);
    }
  }
  return {
    kept: kept.map((r) => entry(r.account_id, r.tag, r.contacts)).sort(),
    counted: indexed.map((r) => entry(r.account_id, r.tag, r.contacts)).sort(),
    fromContacts: [...fromContacts].map(([key, n]) => `${key} ${n}`).sort(),
  };
}

/** Every tag's list total is what its pages list, and GET /tags gives the same counts. */
async function expectTotalsListed(s: TestServer): Promise<void> {
  const tags = await s.request('GET', '/tags', { query: { limit: 100 } });
  expect(tags.status).toBe(200);
  expect(tags.body.total).toBe(tags.body.data.length);
  for (const { name, contact_count } of tags.body.data as { name: string; contact_count: number }[]) {
    expect(contact_count).toBeGreaterThan(0);
    const listed = await s.request('GET', '/contacts', { query: { tag: name, limit: 100 } });
    expect(listed.body.total).toBe(contact_count);
    expect(listed.body.data.length).toBe(contact_count);
  }
}

async function expectKeptExact(s: TestServer): Promise<void> {
  const { kept, counted, fromContacts } = await keptAndCounted(s.database.db);
  expect(kept).toEqual(counted);
  expect(kept).toEqual(fromContacts);
  await expectTotalsListed(s);
}

describeEachDialect('contact tag counts kept by triggers', (server: () => TestServer) => {
  it('follow every writer: creation, changes, a tag added or removed, renames, tag and contact deletions', async () => {
    const s = server();
    const create = async (phone: string, tags: string[], key?: string) => {
      const created = await s.request('POST', '/contacts', { key, body: { phone, tags } });
      expect(created.status).toBe(201);
      return created.body.id as string;
    };
    const a = await create('+14155550001', ['vip', 'newsletter', 'vip']);
    const b = await create('+14155550002', ['newsletter', 'gold']);
    const c = await create('+14155550003', []);
    const d = await create('+14155550004', ['vip']);
    await create('+14155550005', ['vip', 'other-account'], s.keys.otherFull);
    await expectKeptExact(s);

    expect((await s.request('PATCH', `/contacts/${a}`, { body: { tags: ['gold', 'vip'] } })).status).toBe(200);
    expect((await s.request('PATCH', `/contacts/${b}`, { body: { tags: [] } })).status).toBe(200);
    expect((await s.request('PATCH', `/contacts/${c}`, { body: { name: 'No tags changed' } })).status).toBe(200);
    expect((await s.request('POST', `/contacts/${c}/tags`, { body: { tag: 'vip' } })).status).toBe(200);
    // Adding a tag the contact has changes nothing.
    expect((await s.request('POST', `/contacts/${c}/tags`, { body: { tag: 'vip' } })).status).toBe(200);
    expect((await s.request('DELETE', `/contacts/${d}/tags/vip`)).status).toBe(200);
    await expectKeptExact(s);

    // A rename onto a tag some contacts already have merges them; the old name is gone from the list.
    const merged = await s.request('PATCH', '/tags/vip', { body: { name: 'gold' } });
    expect(merged.body).toEqual({ name: 'gold', contact_count: 2 });
    await expectKeptExact(s);
    expect((await s.request('GET', '/contacts', { query: { tag: 'vip' } })).body.total).toBe(0);
    const renamed = await s.request('PATCH', '/tags/gold', { body: { name: 'platinum' } });
    expect(renamed.body).toEqual({ name: 'platinum', contact_count: 2 });
    expect((await s.request('DELETE', '/tags/platinum')).status).toBe(204);
    await expectKeptExact(s);

    // A tag given back after it fell to zero, then a contact deleted with its tags.
    expect((await s.request('PATCH', `/contacts/${d}`, { body: { tags: ['platinum', 'vip'] } })).status).toBe(200);
    expect((await s.request('DELETE', `/contacts/${d}`)).status).toBe(204);
    await expectKeptExact(s);
    expect((await s.request('GET', '/tags')).body.data).toEqual([]);
  });

  it('stay exact under concurrent writes of the same tags, renames and deletions included', async () => {
    const s = server();
    const tags = ['t1', 't2', 't3', 't4', 't5'];
    const rotated = (i: number) => [...tags.slice(i % 5), ...tags.slice(0, i % 5)].slice(0, 1 + (i % 4));
    const body = (i: number) => ({ phone: `+1415556${1000 + i}`, tags: rotated(i) });
    const create = (i: number) => s.request('POST', '/contacts', { body: body(i) });
    const created = await Promise.all(Array.from({ length: 16 }, (_, i) => create(i)));
    for (const response of created) expect(response.status).toBe(201);
    const ids = created.map((response) => response.body.id as string);
    await expectKeptExact(s);

    const writes = await Promise.all([
      ...ids.map((id, i) => s.request('PATCH', `/contacts/${id}`, { body: { tags: rotated(i + 2).reverse() } })),
      ...ids.map((id, i) => s.request('POST', `/contacts/${id}/tags`, { body: { tag: tags[(i + 3) % 5] } })),
      ...ids.slice(0, 4).map((id) => s.request('DELETE', `/contacts/${id}`)),
      s.request('PATCH', '/tags/t2', { body: { name: 't6' } }),
      s.request('DELETE', '/tags/t4'),
    ]);
    // A contact deleted meanwhile is 404 for the writes after it; a renamed or deleted tag may be gone already.
    for (const response of writes) expect([200, 204, 404]).toContain(response.status);
    await expectKeptExact(s);
  });
});

describe('contact tag counts of existing data', () => {
  for (const dialect of ACTIVE_DIALECTS) {
    it(`are filled by the migration from the tags there, and refilled after a rollback [${dialect}]`, async () => {
      const target = await createTestDatabase(dialect);
      const database = openDatabase(target.url);
      try {
        const migrator = new Migrator({ db: database.db, provider: migrationProvider });
        expect((await migrator.migrateTo('2026_11_26_0017_workflow_triggers')).error).toBeUndefined();
        const account = await accountsService.createAccount({ database }, { name: 'Before', plan: 'free' });
        const at = '2026-01-01T00:00:00.000Z';
        for (const [i, tags] of [['vip', 'new'], ['vip'], []].entries()) {
          const contact = contactRow(account.id, { id: `ct_${i}`, name: null, phone: `+1415555000${i}`, at, tags });
          await database.db.insertInto('contacts').values(contact).execute();
          for (const tag of tags) {
            const row = { account_id: account.id, contact_id: contact.id, tag, created_at: at };
            await database.db.insertInto('contact_tags').values(row).execute();
          }
        }
        await migrateToLatest(database.db);
        const filled = await keptAndCounted(database.db);
        expect(filled.kept).toEqual([entry(account.id, 'new', 1), entry(account.id, 'vip', 2)]);
        expect(filled.kept).toEqual(filled.counted);

        expect((await migrator.migrateTo('2026_11_26_0017_workflow_triggers')).error).toBeUndefined();
        await database.db.deleteFrom('contact_tags').where('contact_id', '=', 'ct_0').execute();
        await migrateToLatest(database.db);
        const refilled = await keptAndCounted(database.db);
        expect(refilled.kept).toEqual([entry(account.id, 'vip', 1)]);
      } finally {
        await database.destroy();
        await target.drop();
      }
    });
  }
});
