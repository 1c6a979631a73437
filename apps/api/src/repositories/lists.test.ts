import { describe, expect, it } from 'vitest';
import { describeEachDialect } from '../testing/harness.js';
import { contactRow, conversationRow } from '../testing/rows.js';
import { type ContactRow, contactsRepository } from './contacts.js';
import { type ConversationRow, conversationsRepository } from './conversations.js';
import { TenantScope } from './tenant.js';

/**
 * The list queries take different paths by filter and size (counts without the contacts join,
 * a search's matches sorted or walked in activity order, the page's ids before the join, a tag's
 * total from the tag index). Whatever the path, the page and the total must be exactly what a
 * plain filter-and-sort of the rows gives: this compares them on a data set large enough to
 * take every path.
 */
describeEachDialect('list queries', (server) => {
  const statuses = ['active', 'resolved', 'archived'] as const;
  const platforms = ['whatsapp', 'facebook', 'instagram'] as const;
  const contacts: ReturnType<typeof contactRow>[] = [];
  const conversations: ReturnType<typeof conversationRow>[] = [];
  const tagsOf = new Map<string, string[]>();
  let seeded = false;

  const scope = () => new TenantScope(server().database.db, server().accountId, server().database.capabilities);

  /**
   * 720 "Qxvern" contacts (a common match), 3 "Wzkolan" contacts (a rare one), 120 "Vemdal"
   * contacts of which only every tenth has a conversation (many contacts, few matches), 150 others,
   * 160 with and without LIKE's wildcards in their names.
   */
  async function seed() {
    if (seeded) return;
    seeded = true;
    const base = Date.parse('2026-01-01T00:00:00.000Z');
    const names = [
      ...Array.from({ length: 720 }, (_, i) => `Qxvern ${i}`),
      ...Array.from({ length: 3 }, (_, i) => `Wzkolan ${i}`),
      ...Array.from({ length: 120 }, (_, i) => `Vemdal ${i}`),
      ...Array.from({ length: 150 }, (_, i) => `Other ${i}`),
      // LIKE's wildcards in names, and names they would match if a search forgot to escape them.
      ...Array.from({ length: 40 }, (_, i) => `Snake_case ${i}`),
      ...Array.from({ length: 40 }, (_, i) => `Snake case ${i}`),
      ...Array.from({ length: 40 }, (_, i) => `Half 50% ${i}`),
      ...Array.from({ length: 40 }, (_, i) => `Half 50x ${i}`),
    ];
    names.forEach((name, i) => {
      const at = new Date(base + i * 1000).toISOString();
      const tags = [i % 7 === 0 ? 'vip' : undefined, i % 3 === 0 ? 'newsletter' : undefined].filter(
        (t): t is string => t !== undefined,
      );
      const id = `ct_${String(i).padStart(6, '0')}`;
      tagsOf.set(id, tags);
      contacts.push(contactRow(server().accountId, { id, name, phone: `+1555${String(1_000_000 + i)}`, at, tags }));
    });
    contacts.forEach((contact, i) => {
      // One conversation per contact, two for the rare ones; activity times repeat (ties break on id).
      const own = contact.name?.startsWith('Wzkolan')
        ? 2
        : contact.name?.startsWith('Vemdal')
          ? i % 10 === 0
            ? 1
            : 0
          : 1;
      for (let n = 0; n < own; n++) {
        const seq = conversations.length;
        const at = new Date(base + (seq % 400) * 60_000).toISOString();
        conversations.push(
          conversationRow(server().accountId, {
            id: `conv_${String(seq).padStart(6, '0')}`,
            contact_id: contact.id,
            at,
            platform: platforms[(i + n) % 3] as ConversationRow['platform'],
            status: statuses[(seq * 7) % 3] as ConversationRow['status'],
          }),
        );
      }
    });
    const strip = <T extends { account_id: string }>({ account_id: _, ...row }: T) => row;
    for (let i = 0; i < contacts.length; i += 200)
      await scope().insert('contacts', contacts.slice(i, i + 200).map(strip));
    for (let i = 0; i < conversations.length; i += 200)
      await scope().insert('conversations', conversations.slice(i, i + 200).map(strip));
    const tagRows = [...tagsOf].flatMap(([contactId, tags]) =>
      tags.map((tag) => ({ contact_id: contactId, tag, created_at: '2026-01-01T00:00:00.000Z' })),
    );
    for (let i = 0; i < tagRows.length; i += 200) await scope().insert('contact_tags', tagRows.slice(i, i + 200));
  }

  const byActivity = (a: Omit<ConversationRow, 'channel_id'>, b: Omit<ConversationRow, 'channel_id'>) =>
    a.last_activity_at === b.last_activity_at
      ? a.id < b.id
        ? 1
        : -1
      : a.last_activity_at < b.last_activity_at
        ? 1
        : -1;

  describe('conversations', () => {
    const cases: {
      filter: {
        status?: ConversationRow['status'];
        platform?: ConversationRow['platform'];
        search?: string;
        searchDigits?: string;
      };
      offsets: number[];
    }[] = [
      { filter: {}, offsets: [0, 20, 860, 875, 2000] },
      { filter: { status: 'active' }, offsets: [0, 100, 290] },
      { filter: { platform: 'facebook', status: 'resolved' }, offsets: [0, 40, 96] },
      // Three characters, 720 matches: the total is the trigram's kept count, the page walks the
      // activity order checking the conversations' copies of the names (migration 0008).
      { filter: { search: 'qxv' }, offsets: [0, 20, 500, 719, 720, 5000] },
      { filter: { search: 'n 1' }, offsets: [0, 20, 100, 140] },
      // `_` and `%` are characters, not LIKE's wildcards (which would match `e c` and `0x `).
      { filter: { search: 'e_c' }, offsets: [0, 20] },
      { filter: { search: '0% ' }, offsets: [0, 20] },
      { filter: { search: 'snake_' }, offsets: [0, 20] },
      // Three characters, 6 matches: sorting them is cheaper than the walk; the way of any search.
      { filter: { search: 'lan' }, offsets: [0, 3, 6] },
      // More than three characters, 720 contacts and as many matches: their own counts give the
      // total, the page walks the activity order checking the contacts found.
      { filter: { search: 'qxve' }, offsets: [0, 20, 500, 719, 720, 5000] },
      // Narrowed by a status: counted by probes, still walked.
      { filter: { search: 'qxv', status: 'archived' }, offsets: [0, 230] },
      // 120 contacts, 12 matches: sorting the matches reads less than walking would.
      { filter: { search: 'vemd' }, offsets: [0, 10, 12] },
      { filter: { search: 'vemd', status: 'active' }, offsets: [0] },
      // 111 matching contacts: just more than the repository lists by id first; 31: a list of ids.
      { filter: { search: 'qxvern 1' }, offsets: [0, 100, 111] },
      { filter: { search: 'qxvern 7', status: 'resolved' }, offsets: [0, 5] },
      { filter: { search: 'wzkol' }, offsets: [0, 3, 6] },
      { filter: { search: 'wzkol', platform: 'facebook' }, offsets: [0] },
      // Under three characters: no trigram index, a scan.
      { filter: { search: 'zk' }, offsets: [0, 2] },
      { filter: { search: 'nothing-like-it' }, offsets: [0] },
      // Digits alone: the names (`Qxvern 500`, `Qxvern 1500`, …) and the phones' digits, one search of both columns.
      { filter: { search: '500', searchDigits: '500' }, offsets: [0, 20] },
      { filter: { search: '500', searchDigits: '500', status: 'active' }, offsets: [0] },
    ];
    for (const { filter, offsets } of cases) {
      it(`pages ${JSON.stringify(filter)} exactly`, async () => {
        await seed();
        const contactById = new Map(contacts.map((c) => [c.id, c]));
        const expected = conversations
          .filter(
            (c) =>
              (!filter.status || c.status === filter.status) && (!filter.platform || c.platform === filter.platform),
          )
          .filter((c) => {
            if (!filter.search) return true;
            const contact = contactById.get(c.contact_id);
            return (
              (contact?.name_search ?? '').includes(filter.search) ||
              (filter.searchDigits !== undefined && (contact?.phone_digits ?? '').includes(filter.searchDigits))
            );
          })
          .sort(byActivity);
        for (const offset of offsets) {
          const { rows, total } = await conversationsRepository.list(scope(), filter, { limit: 20, offset });
          expect(total, `offset ${offset}`).toBe(expected.length);
          expect(
            rows.map((r) => [r.id, r.contact_name, r.contact_phone]),
            `offset ${offset}`,
          ).toEqual(
            expected
              .slice(offset, offset + 20)
              .map((c) => [c.id, contactById.get(c.contact_id)?.name, contactById.get(c.contact_id)?.phone]),
          );
        }
      });
    }

    it('finds a phone by its digits among many name matches', async () => {
      await seed();
      const target = contacts.find((c) => c.name === 'Qxvern 500') as ContactRow;
      const digits = target.phone_digits.slice(-7);
      const { rows, total } = await conversationsRepository.list(
        scope(),
        { search: digits, searchDigits: digits },
        { limit: 20, offset: 0 },
      );
      expect(total).toBe(1);
      expect(rows.map((r) => r.contact_id)).toEqual([target.id]);
    });

    it('counts only its own account', async () => {
      await seed();
      const other = new TenantScope(server().database.db, server().otherAccountId, server().database.capabilities);
      expect((await conversationsRepository.list(other, { search: 'qxv' }, { limit: 20, offset: 0 })).total).toBe(0);
    });

    // The statements of these lists are compiled once per shape, the account bound at each call:
    // the first account's list must not answer the second's.
    it('lists each account its own conversations, filtered or not, one after the other', async () => {
      await seed();
      const other = new TenantScope(server().database.db, server().otherAccountId, server().database.capabilities);
      for (const filter of [
        {},
        { status: 'active' as const },
        { platform: 'facebook' as const, status: 'resolved' as const },
      ]) {
        expect(
          (await conversationsRepository.list(scope(), filter, { limit: 20, offset: 0 })).total,
          JSON.stringify(filter),
        ).toBeGreaterThan(0);
        expect(
          await conversationsRepository.list(other, filter, { limit: 20, offset: 0 }),
          JSON.stringify(filter),
        ).toEqual({ rows: [], total: 0 });
      }
    });
  });

  describe('contacts by search', () => {
    // 720 matches: the creation order walked; 3 and 1: the matches sorted; 2 characters: a scan.
    for (const filter of [
      { search: 'qxv' },
      { search: 'wzkol' },
      { search: '1000500', searchDigits: '1000500' },
      { search: 'zk' },
    ]) {
      it(`counts and pages ${JSON.stringify(filter)} exactly`, async () => {
        await seed();
        const expected = contacts
          .filter(
            (c) =>
              (c.name_search ?? '').includes(filter.search) ||
              (filter.searchDigits !== undefined && c.phone_digits.includes(filter.searchDigits)),
          )
          .sort((a, b) =>
            a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1,
          );
        expect(expected.length).toBeGreaterThan(0);
        for (const offset of [0, 2, 40, 700, 720]) {
          const { rows, total } = await contactsRepository.list(scope(), filter, { limit: 20, offset });
          expect(total).toBe(expected.length);
          expect(rows.map((r) => r.id)).toEqual(expected.slice(offset, offset + 20).map((c) => c.id));
        }
      });
    }
  });

  describe('contacts without a search', () => {
    it('counts and pages all contacts exactly', async () => {
      await seed();
      const expected = [...contacts].sort((a, b) =>
        a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1,
      );
      for (const offset of [0, 40, expected.length - 5, expected.length]) {
        const { rows, total } = await contactsRepository.list(scope(), {}, { limit: 20, offset });
        expect(total).toBe(expected.length);
        expect(rows.map((r) => r.id)).toEqual(expected.slice(offset, offset + 20).map((c) => c.id));
      }
    });

    it('lists each account its own contacts, by tag or not, one after the other', async () => {
      await seed();
      const other = new TenantScope(server().database.db, server().otherAccountId, server().database.capabilities);
      for (const filter of [{}, { tag: 'vip' }]) {
        expect(
          (await contactsRepository.list(scope(), filter, { limit: 20, offset: 0 })).total,
          JSON.stringify(filter),
        ).toBeGreaterThan(0);
        expect(await contactsRepository.list(other, filter, { limit: 20, offset: 0 }), JSON.stringify(filter)).toEqual({
          rows: [],
          total: 0,
        });
      }
    });
  });

  describe('contacts by tag', () => {
    for (const filter of [{ tag: 'vip' }, { tag: 'newsletter' }, { tag: 'vip', search: 'qxv' }, { tag: 'missing' }]) {
      it(`counts and pages ${JSON.stringify(filter)} exactly`, async () => {
        await seed();
        const expected = contacts
          .filter(
            (c) =>
              tagsOf.get(c.id)?.includes(filter.tag) &&
              (!filter.search || (c.name_search ?? '').includes(filter.search)),
          )
          .sort((a, b) =>
            a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1,
          );
        for (const offset of [0, 40]) {
          const { rows, total } = await contactsRepository.list(scope(), filter, { limit: 20, offset });
          expect(total).toBe(expected.length);
          expect(rows.map((r) => r.id)).toEqual(expected.slice(offset, offset + 20).map((c) => c.id));
        }
      });
    }
  });
});
