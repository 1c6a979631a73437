import type { ListTagsQuery } from '@convo/core';
import type * as z from 'zod';
import { tagsRepository } from '../repositories/tags.js';
import { type ServiceContext, page, scopeOf } from './context.js';

export const tagsService = {
  async list(ctx: ServiceContext, query: z.output<typeof ListTagsQuery>) {
    const { rows, total } = await tagsRepository.list(scopeOf(ctx), query);
    return page(rows, total, query.limit, query.offset);
  },
};
