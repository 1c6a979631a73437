import * as z from 'zod';
import { listOf, pagination } from './common.js';
import { TagName } from './contacts.js';

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

/** A tag in a path, URL-encoded (`/tags/needs%20reply`). */
export const TagParams = z.strictObject({ tag: z.string() });

export const UpdateTagBody = z
  .strictObject({
    /** The new name; when another tag already has it, the two become one. */
    name: TagName,
  })
  .meta({ id: 'UpdateTagBody' });
export type UpdateTagBody = z.input<typeof UpdateTagBody>;
