import type { Event, ListEventsQuery } from '../contract.js';
import type { PagePromise } from '../pagination.js';
import type { RequestOptions } from '../request-sender.js';
import { Resource, withOffset } from './resource.js';

export class Events extends Resource {
  /** The account's events of the last 30 days, newest first; filter `type`. */
  list(params: ListEventsQuery = {}, options?: RequestOptions): PagePromise<Event> {
    return this.paginate('events.list', (offset) => ({ query: withOffset(params, offset) }), options);
  }
}
