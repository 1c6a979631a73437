import { expect, it } from 'vitest';
import { describeEachDialect } from '../../testing/harness.js';
import { contactRow, conversationRow } from '../../testing/rows.js';
import { TenantScope } from '../tenant.js';
import { type ConversationFilter, FILTER_COLUMNS, type FilterColumn } from './filter.js';
import { listConversations } from './list.js';
import { FEW_CONTACTS, type ListPlan, planList } from './plan.js';
import type { ConversationRow } from './types.js';

/** Every value of each declared filter: a filter added to FILTER_COLUMNS must be listed here. */
const VALUES: { [K in FilterColumn]: readonly NonNullable<ConversationFilter[K]>[] } = {
  status: ['active', 'resolved', 'archived'],
  platform: ['whatsapp', 'facebook', 'instagram'],
};

/**
 * A filter is declared once (FILTER_COLUMNS) and every plan applies it: for each declared filter and
 * value, each plan's rows and total are those of a plain filter-and-sort of the rows.
 */
describeEachDialect('conversation list filters', (server) => {
  // 130 "Jorvak" contacts (more than FEW_CONTACTS: the probe plan), 4 "Pellum" ones (given), 20 others.
  const names = [
    ...Array.from({ length: FEW_CONTACTS + 30 }, (_, i) => `Jorvak ${i}`),
    ...Array.from({ length: 4 }, (_, i) => `Pellum ${i}`),
    ...Array.from({ length: 20 }, (_, i) => `Other ${i}`),
  ];
  const base = Date.parse('2026-02-01T00:00:00.000Z');
  const contacts = names.map((name, i) =>
    contactRow('', {
      id: `ct_f${String(i).padStart(5, '0')}`,
      name,
      phone: `+1666${1_000_000 + i}`,
      at: new Date(base).toISOString(),
    }),
  );
  const conversations: ReturnType<typeof conversationRow>[] = [];
  contacts.forEach((contact, i) => {
    for (let n = 0; n < (contact.name?.startsWith('Pellum') ? 6 : 2); n++) {
      const seq = conversations.length;
      conversations.push(
        conversationRow('', {
          id: `conv_f${String(seq).padStart(5, '0')}`,
          contact_id: contact.id,
          at: new Date(base + (seq % 97) * 60_000).toISOString(),
          status: VALUES.status[(seq + n) % 3],
          platform: VALUES.platform[(i + seq) % 3],
        }),
      );
    }
  });
  let seeded = false;
  const scope = () => new TenantScope(server().database.db, server().otherAccountId, server().database.capabilities);
  async function seed() {
    if (seeded) return;
    seeded = true;
    const strip = <T extends { account_id: string }>({ account_id: _, ...row }: T) => row;
    await scope().insert('contacts', contacts.map(strip));
    for (let i = 0; i < conversations.length; i += 200)
      await scope().insert('conversations', conversations.slice(i, i + 200).map(strip));
  }

  const byActivity = (a: Omit<ConversationRow, 'channel_id'>, b: Omit<ConversationRow, 'channel_id'>) =>
    a.last_activity_at === b.last_activity_at
      ? a.id < b.id
        ? 1
        : -1
      : a.last_activity_at < b.last_activity_at
        ? 1
        : -1;

  // A Pellum contact: six conversations, over every status and platform.
  const pellum = contacts[FEW_CONTACTS + 30]?.id as string;
  const searches: { search: string | undefined; contactId?: string; plan: ListPlan; contacts?: number }[] = [
    { search: undefined, plan: 'counters' },
    { search: 'pellum', plan: 'given', contacts: 4 },
    { search: 'jorvak', plan: 'probe', contacts: FEW_CONTACTS + 30 },
    { search: undefined, contactId: pellum, plan: 'contact' },
    { search: 'pellum', contactId: pellum, plan: 'contact' },
    { search: 'jorvak', contactId: pellum, plan: 'contact' },
  ];

  for (const column of FILTER_COLUMNS) {
    for (const { search, contactId, plan, contacts: matching } of searches) {
      const named = `${plan} plan${contactId ? `, searching ${search ?? 'nothing'}` : ''}`;
      it(`applies ${column} in the ${named}`, async () => {
        await seed();
        const nameOf = new Map(contacts.map((contact) => [contact.id, contact.name_search ?? '']));
        for (const value of VALUES[column]) {
          const filter: ConversationFilter = { [column]: value, search, contactId };
          expect(planList(filter, { contacts: matching })).toBe(plan);
          const expected = conversations
            .filter(
              (row) =>
                row[column] === value &&
                (contactId === undefined || row.contact_id === contactId) &&
                (search === undefined || nameOf.get(row.contact_id)?.includes(search)),
            )
            .sort(byActivity);
          for (const offset of [0, 1, 20, expected.length]) {
            const { rows, total } = await listConversations(scope(), filter, { limit: contactId ? 1 : 20, offset });
            expect(total, `${value} at ${offset}`).toBe(expected.length);
            expect(
              rows.map((row) => row.id),
              `${value} at ${offset}`,
            ).toEqual(expected.slice(offset, offset + (contactId ? 1 : 20)).map((row) => row.id));
          }
        }
      });
    }
  }
});
