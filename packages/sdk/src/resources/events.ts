import type { Event, EventType, ListEventsQuery } from '../contract.js';
import type { PagePromise } from '../pagination.js';
import type { RequestOptions, StreamOptions } from '../request-sender.js';
import { Resource, withOffset } from './resource.js';

/** How `follow` waits between two looks at the log, by default. */
const FOLLOW_INTERVAL_MS = 2_000;
/** The largest page the API gives. */
const PAGE = 100;

export interface FollowOptions {
  /** The event id to follow on from (the newest you have); by default the newest event now. */
  after?: string;
  type?: EventType;
  /** Between two looks at the log once it has nothing new (default 2 s). */
  intervalMs?: number;
  /** Stops following (the iteration ends) when aborted. */
  signal?: AbortSignal;
}

/** What `events.stream` follows. */
export interface StreamParams {
  /** Only events of these types: an array, or a comma-separated string (`message.received,message.updated`). */
  type?: EventType | string | readonly string[];
  /** An event id: the stream starts after it, catching up first; without it, from now. */
  starting_after?: string;
}

export class Events extends Resource {
  /**
   * The account's events of the last 30 days, newest first; filter `type`; `starting_after`/`ending_before` page from
   * an event.
   */
  list(params: ListEventsQuery = {}, options?: RequestOptions): PagePromise<Event> {
    return this.paginate('events.list', (offset) => ({ query: withOffset(params, offset) }), options);
  }

  /**
   * The account's events as they happen, oldest first, over one long-lived connection (Server-Sent
   * Events): from `starting_after` (catching up first) or from now; `type` filters (one type, several,
   * or comma-separated). Iterate with `for await`; `break` or `options.signal` closes the connection.
   * A dropped connection or a restarting server is reconnected with backoff, resuming after the last
   * event yielded, so each event comes once, in order.
   */
  stream(params: StreamParams = {}, options?: StreamOptions): AsyncGenerator<Event, void, undefined> {
    const { type, starting_after } = params;
    const query = {
      ...(type === undefined ? {} : { type: typeof type === 'string' ? type : type.join(',') }),
      ...(starting_after === undefined ? {} : { starting_after }),
    };
    return this.sender.stream('events.stream', { query }, options) as AsyncGenerator<Event, void, undefined>;
  }

  /**
   * Every event recorded after `eventId`, oldest first, then the iteration ends: a catch-up after
   * a pause. It pages with `ending_before`, so an event is yielded exactly once even while new ones
   * arrive.
   */
  async *since(eventId: string, params: { type?: EventType } = {}, options?: RequestOptions): AsyncGenerator<Event> {
    let cursor = eventId;
    for (;;) {
      const page = await this.request(
        'events.list',
        { query: { ...params, ending_before: cursor, limit: PAGE } },
        options,
      );
      const oldestFirst = [...page.data].reverse();
      yield* oldestFirst;
      const newest = oldestFirst.at(-1);
      if (newest) cursor = newest.id;
      if (!page.has_more) return;
    }
  }

  /**
   * The events as they are recorded, oldest first, without end (until `signal` aborts): catches
   * up from `after` (or from the newest event now), then looks again every `intervalMs`.
   */
  async *follow(followOptions: FollowOptions = {}, options?: RequestOptions): AsyncGenerator<Event> {
    const { type, signal } = followOptions;
    const interval = followOptions.intervalMs ?? FOLLOW_INTERVAL_MS;
    // The cursor moves over events of every type, so that `type` never holds it back.
    let cursor =
      followOptions.after ?? (await this.request('events.list', { query: { limit: 1 } }, options)).data[0]?.id;
    while (!signal?.aborted) {
      let found = false;
      if (cursor === undefined) {
        // An empty log: its first event, once there is one, starts the cursor.
        const page = await this.request('events.list', { query: { limit: 1 } }, options);
        const oldest =
          page.total > 0
            ? (await this.request('events.list', { query: { limit: 1, offset: page.total - 1 } }, options)).data[0]
            : undefined;
        if (oldest) {
          found = true;
          cursor = oldest.id;
          if (type === undefined || oldest.type === type) yield oldest;
        }
      } else {
        for await (const event of this.since(cursor, {}, options)) {
          found = true;
          cursor = event.id;
          if (type === undefined || event.type === type) yield event;
          if (signal?.aborted) return;
        }
      }
      if (!found) await pause(interval, signal);
    }
  }
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
