import type { ListTagsQuery, Tag } from '../contract.js';
import type { PagePromise } from '../pagination.js';
import type { RequestOptions } from '../request-sender.js';
import { Resource, withOffset } from './resource.js';

export class Tags extends Resource {
  /** Tags in use, by name, with their contact counts. */
  list(params: ListTagsQuery = {}, options?: RequestOptions): PagePromise<Tag> {
    return this.paginate('tags.list', (offset) => ({ query: withOffset(params, offset) }), options);
  }
}
