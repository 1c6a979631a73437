import type { TenantScope } from './tenant.js';

export const tagsRepository = {
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
