import type { ListTagsQuery, Tag, UpdateTagBody } from '@convo/core';
import type * as z from 'zod';
import { ApiError } from '../errors.js';
import { now } from '../ids.js';
import { contactsRepository } from '../repositories/contacts.js';
import { tagsRepository } from '../repositories/tags.js';
import type { TenantScope } from '../repositories/tenant.js';
import { toContact } from './contacts.js';
import { type ServiceContext, transaction, page, scopeOf } from './context.js';
import { emitEvent } from './events.js';

/**
 * Rewrites `tag` on every contact that has it, in one transaction: each contact's row is locked
 * (in id order, so two such changes cannot deadlock) and its `tags` and the tag index changed
 * together, as adding or removing one tag does. `change` gives a contact's new tags.
 */
async function rewriteTag(scope: TenantScope, tag: string, change: (tags: string[]) => string[]): Promise<number> {
  const ids = await tagsRepository.contactIdsWith(scope, tag);
  if (ids.length === 0) throw ApiError.notFound('tag', tag);
  const at = now();
  for (const id of ids) {
    const contact = await contactsRepository.findByIdForUpdate(scope, id);
    if (!contact) continue;
    const tags = change(JSON.parse(contact.tags) as string[]);
    const patch = { tags: JSON.stringify(tags), updated_at: at };
    await contactsRepository.update(scope, id, patch);
    await contactsRepository.replaceTagIndex(scope, id, tags, at);
    await emitEvent(scope, 'contact.updated', toContact({ ...contact, ...patch }));
  }
  return ids.length;
}

export const tagsService = {
  async list(ctx: ServiceContext, query: z.output<typeof ListTagsQuery>) {
    const { rows, total } = await tagsRepository.list(scopeOf(ctx), query);
    return page(rows, total, query.limit, query.offset);
  },

  /** Renames a tag everywhere; a contact that has both names keeps the new one once, where it was. */
  async update(
    ctx: ServiceContext,
    { tag, body }: { tag: string; body: z.output<typeof UpdateTagBody> },
  ): Promise<Tag> {
    return transaction(ctx, async (tx) => {
      const scope = scopeOf(tx);
      if (body.name === tag) {
        const count = await tagsRepository.countContacts(scope, tag);
        if (count === 0) throw ApiError.notFound('tag', tag);
        return { name: tag, contact_count: count };
      }
      await rewriteTag(scope, tag, (tags) =>
        tags.includes(body.name) ? tags.filter((t) => t !== tag) : tags.map((t) => (t === tag ? body.name : t)),
      );
      return { name: body.name, contact_count: await tagsRepository.countContacts(scope, body.name) };
    });
  },

  async delete(ctx: ServiceContext, tag: string): Promise<void> {
    await transaction(ctx, (tx) => rewriteTag(scopeOf(tx), tag, (tags) => tags.filter((t) => t !== tag)));
  },
};
