import type { ListTagsQuery, Tag, UpdateTagBody } from '../contract.js';
import type { PagePromise } from '../pagination.js';
import type { RequestOptions } from '../request-sender.js';
import { Resource, withOffset } from './resource.js';

export class Tags extends Resource {
  /** Tags in use, by name, with their contact counts. */
  list(params: ListTagsQuery = {}, options?: RequestOptions): PagePromise<Tag> {
    return this.paginate('tags.list', (offset) => ({ query: withOffset(params, offset) }), options);
  }

  /** Renames a tag on every contact (merging into the new name when it exists). */
  update(tag: string, body: UpdateTagBody, options?: RequestOptions): Promise<Tag> {
    return this.request('tags.update', { params: { tag }, body }, options);
  }

  /** Removes a tag from every contact. */
  async del(tag: string, options?: RequestOptions): Promise<void> {
    await this.request('tags.delete', { params: { tag } }, options);
  }
}
