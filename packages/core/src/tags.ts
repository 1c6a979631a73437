import * as z from 'zod';
import { listOf, pagination } from './common.js';

export const Tag = z
  .object({
    name: z.string(),
    contact_count: z.int().min(1),
  })
  .meta({ id: 'Tag' });
export type Tag = z.infer<typeof Tag>;

export const TagList = listOf(Tag, 'TagList');
export type TagList = z.infer<typeof TagList>;

export const ListTagsQuery = z.strictObject({ ...pagination });
export type ListTagsQuery = z.input<typeof ListTagsQuery>;
