import type { TenantScope } from './tenant.js';

export const tagsRepository = {
  /** The ids of the contacts that have `tag`, in id order (the order their rows are locked in). */
  contactIdsWith: async (scope: TenantScope, tag: string): Promise<string[]> =>
    (
      await scope.selectFrom('contact_tags').select('contact_tags.contact_id').where('contact_tags.tag', '=', tag).orderBy('contact_tags.contact_id').execute()
    ).map((row) => row.contact_id),

  /** How many contacts have `tag`. */
  countContacts: async (scope: TenantScope, tag: string): Promise<number> =>
    Number(
      (
        await scope
          .selectFrom('contact_tags')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('contact_tags.tag', '=', tag)
          .executeTakeFirstOrThrow()
      ).n,
    ),

  /** Tags in use, by name in code-point order, with how many contacts have each. */
  async list(scope: TenantScope, page: { limit: number; offset: number }) {
    const grouped = scope
      .selectFrom('contact_tags')
      .select((eb) => ['contact_tags.tag as name', eb.fn.countAll<number>().as('contact_count')])
      .groupBy('contact_tags.tag');
    const [rows, count] = await Promise.all([
      grouped.orderBy('contact_tags.tag', 'asc').limit(page.limit).offset(page.offset).execute(),
      scope
        .selectFrom('contact_tags')
        .select((eb) => eb.fn.count<number>('contact_tags.tag').distinct().as('total'))
        .executeTakeFirstOrThrow(),
    ]);
    return { rows: rows.map((r) => ({ name: r.name, contact_count: Number(r.contact_count) })), total: Number(count.total) };
  },
};
