import { describe, expect, it } from 'vitest';
import { FILTER_COLUMNS, type ConversationFilter } from './filter.js';
import { FEW_CONTACTS, planList, walkIsCheaper } from './plan.js';

/** A value of each declared filter, as a list may be given it. */
const filterValue: Required<{ [K in (typeof FILTER_COLUMNS)[number]]: NonNullable<ConversationFilter[K]> }> = {
  status: 'active',
  platform: 'whatsapp',
};

describe('planList', () => {
  it('answers a list without a search from the counters, whatever it filters', () => {
    expect(planList({})).toBe('counters');
    for (const column of FILTER_COLUMNS) expect(planList({ [column]: filterValue[column] })).toBe('counters');
    expect(planList({ status: 'active', platform: 'facebook' })).toBe('counters');
  });

  it("answers one contact's conversations by the contact plan, whatever else it selects", () => {
    expect(planList({ contactId: 'ct_1' })).toBe('contact');
    expect(planList({ contactId: 'ct_1', search: 'tin' })).toBe('contact');
    expect(planList({ contactId: 'ct_1', search: 'tina', status: 'active' }, { contacts: 1 })).toBe('contact');
  });

  it('takes the trigram plan for three characters of a name, with no digits and no filter', () => {
    expect(planList({ search: 'tin' })).toBe('trigram');
    expect(planList({ search: 'müß' })).toBe('trigram');
    expect(planList({ search: '555', searchDigits: '555' })).toBe('contacts');
    expect(planList({ search: 'tina' })).toBe('contacts');
    expect(planList({ search: 'ti' })).toBe('contacts');
  });

  it('never takes the trigram plan for a filtered list, whichever filter is declared', () => {
    for (const column of FILTER_COLUMNS)
      expect(planList({ search: 'tin', [column]: filterValue[column] })).toBe('contacts');
  });

  it('reads the contacts first, then takes them as a list when few and probes them when many', () => {
    expect(planList({ search: 'tina' })).toBe('contacts');
    expect(planList({ search: 'tina' }, { contacts: 1 })).toBe('given');
    expect(planList({ search: 'tina' }, { contacts: FEW_CONTACTS })).toBe('given');
    expect(planList({ search: 'tina' }, { contacts: FEW_CONTACTS + 1 })).toBe('probe');
    expect(planList({ search: 'tin' }, { trigramDeclined: true })).toBe('contacts');
    expect(planList({ search: 'tin' }, { trigramDeclined: true, contacts: 3 })).toBe('given');
  });

  it('walks when the walk reads fewer entries than sorting the matches would', () => {
    // A common fragment's first page is walked; a rare fragment's matches, or a deep page, are sorted.
    expect(walkIsCheaper({ limit: 20, offset: 0 }, 200_000, 4_224)).toBe(true);
    expect(walkIsCheaper({ limit: 20, offset: 0 }, 200_000, 6)).toBe(false);
    expect(walkIsCheaper({ limit: 20, offset: 100_000 }, 200_000, 4_224)).toBe(false);
  });
});
