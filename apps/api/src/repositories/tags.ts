import { type TenantScope, withTotal } from './tenant.js';

/**
 * The account's tags with their number of contacts (migration 0018's counters); a count of zero is
 * a tag no longer in use.
 */
const tagsInUse = (scope: TenantScope) => {
  const counts = scope.selectFrom('contact_tag_counts');
  return counts.where('contact_tag_counts.contacts', '>', 0);
};

export const tagsRepository = {
  /** The ids of the contacts that have `tag`, in id order (the order their rows are locked in). */
  async contactIdsWith(scope: TenantScope, tag: string): Promise<string[]> {
    const tagged = scope.selectFrom('contact_tags').where('contact_tags.tag', '=', tag);
    const rows = await tagged.select('contact_tags.contact_id').orderBy('contact_tags.contact_id').execute();
    return rows.map((row) => row.contact_id);
  },

  /** How many contacts have `tag`. */
  async countContacts(scope: TenantScope, tag: string): Promise<number> {
    const counted = tagsInUse(scope).where('contact_tag_counts.tag', '=', tag);
    const row = await counted.select('contact_tag_counts.contacts').executeTakeFirst();
    return Number(row?.contacts ?? 0);
  },

  /** Tags in use, by name in code-point order, with how many contacts have each. */
  async list(scope: TenantScope, page: { limit: number; offset: number }) {
    const columns = ['contact_tag_counts.tag as name', 'contact_tag_counts.contacts as contact_count'] as const;
    const named = tagsInUse(scope).select(columns).orderBy('contact_tag_counts.tag');
    const { rows, total } = await withTotal(named.limit(page.limit).offset(page.offset).execute(), tagsInUse(scope));
    return { rows: rows.map((r) => ({ name: r.name, contact_count: Number(r.contact_count) })), total };
  },
};
