import type { Event, EventType } from '@convo/core';
import type { DatabaseLogger } from '../db/database.js';
import { type EventNotifications, listenForEvents } from '../db/event-notifications.js';
import { ApiError } from '../errors.js';
import { eventsRepository } from '../repositories/events.js';
import { type ServiceContext, scopeOf, transaction } from './context.js';
import { toEvent } from './events.js';

/** Open streams an account may have at once, on each server (CONTRACT: Live events). */
export const MAX_STREAMS_PER_ACCOUNT = 5;

/** Events read per query while a stream catches up. */
const BATCH = 500;

/** A stream whose client has not taken this many events is ended; the client resumes with `Last-Event-ID`. */
const MAX_QUEUED = 10_000;

/** One open stream: the account's events after `position`, of its types, as an async iterable. */
export class EventFollower implements AsyncIterable<Event> {
  private readonly queue: Event[] = [];
  private waiting: (() => void) | undefined;
  private ended = false;

  constructor(
    readonly accountId: string,
    /** The event the stream starts after (undefined: the account has none yet), for a client that drops before the first. */
    readonly startsAfter: string | undefined,
    /** The log position of the last event this stream has passed (sent, or skipped by its filter). */
    public position: number,
    private readonly types: ReadonlySet<EventType> | undefined,
    private readonly onEnd: (follower: EventFollower) => void,
  ) {}

  /** Takes the next event of the log (in position order). */
  offer(event: Event, position: number): void {
    if (this.ended || position <= this.position) return;
    this.position = position;
    if (this.types && !this.types.has(event.type)) return;
    this.queue.push(event);
    if (this.queue.length > MAX_QUEUED) this.end();
    this.wake();
  }

  /** Ends the stream: its iteration finishes once what is queued has been taken. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd(this);
    this.wake();
  }

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Event> {
    try {
      for (;;) {
        const next = this.queue.shift();
        if (next) yield next;
        else if (this.ended) return;
        else
          await new Promise<void>((resolve) => {
            this.waiting = resolve;
          });
      }
    } finally {
      this.end();
    }
  }
}

/**
 * The event streams of one server process (CONTRACT: Live events). Each account with open streams
 * is read once per wake-up, however many streams it has: the events after its streams' lowest
 * position, in the order of the events log (events.position, given at commit by
 * eventsRepository.assignPositions), so each stream sees every event once and in order, whichever
 * process wrote it. Wake-ups come from db/event-notifications.ts.
 */
export class EventFeed {
  private readonly followers = new Map<string, Set<EventFollower>>();
  /** The accounts being read now, and those to read again when that ends. */
  private readonly reading = new Map<string, Promise<void>>();
  private readonly readAgain = new Set<string>();
  private notifications: EventNotifications | undefined;
  private closed = false;

  constructor(
    private readonly ctx: Pick<ServiceContext, 'database' | 'settings'>,
    private readonly logger: DatabaseLogger & { error(obj: object, msg: string): void },
  ) {}

  /**
   * Opens a stream of the account's events after the event `after` (404 when unknown), else from
   * now, of `types` when given; 429 when the account has its streams' most open here.
   */
  async follow(accountId: string, options: { after?: string | undefined; types?: readonly EventType[] | undefined }) {
    this.checkRoom(accountId);
    const ctx = { ...this.ctx, accountId };
    const scope = scopeOf(ctx);
    if (await eventsRepository.hasUnpositioned(scope))
      await transaction(ctx, (tx) => eventsRepository.assignPositions(scopeOf(tx)));
    let start: { id: string | undefined; position: number };
    if (options.after === undefined) {
      const newest = await eventsRepository.newestPositioned(scope);
      start = { id: newest?.id, position: newest?.position ?? 0 };
    } else {
      const found = await eventsRepository.positionOf(scope, options.after);
      if (found === undefined || found === null) throw ApiError.notFound('event', options.after);
      start = { id: options.after, position: found };
    }
    // Checked again: other streams of the account may have opened while this one looked.
    this.checkRoom(accountId);
    const follower = new EventFollower(
      accountId,
      start.id,
      start.position,
      options.types ? new Set(options.types) : undefined,
      (ended) => this.unfollow(ended),
    );
    const open = this.followers.get(accountId) ?? new Set();
    this.followers.set(accountId, open.add(follower));
    this.notifications ??= listenForEvents(this.ctx.database, (account) => this.wake(account), this.logger);
    this.wake(accountId);
    return follower;
  }

  /** Ends every stream (shutdown): their clients reconnect elsewhere with `Last-Event-ID`. */
  async close(): Promise<void> {
    this.closed = true;
    for (const open of this.followers.values()) for (const follower of [...open]) follower.end();
    await this.notifications?.close();
    await Promise.allSettled(this.reading.values());
  }

  /** Forgets an ended stream; the last one's end stops listening, which the next stream starts again. */
  private unfollow(follower: EventFollower): void {
    const open = this.followers.get(follower.accountId);
    open?.delete(follower);
    if (open?.size === 0) this.followers.delete(follower.accountId);
    if (this.followers.size > 0 || this.closed) return;
    const notifications = this.notifications;
    this.notifications = undefined;
    notifications
      ?.close()
      .catch((err: unknown) => this.logger.error({ err }, 'event streams: the listener did not close'));
  }

  private checkRoom(accountId: string): void {
    if (this.closed) throw new ApiError('server_error', 'The server is shutting down; connect again');
    if ((this.followers.get(accountId)?.size ?? 0) >= MAX_STREAMS_PER_ACCOUNT)
      throw new ApiError(
        'rate_limited',
        `An account may have ${MAX_STREAMS_PER_ACCOUNT} event streams open at once; close one first`,
        undefined,
        { 'retry-after': '5' },
      );
  }

  /** Reads the account's new events (every followed account's when undefined), once at a time per account. */
  private wake(accountId: string | undefined): void {
    if (accountId === undefined) {
      for (const account of this.followers.keys()) this.wake(account);
      return;
    }
    if (!this.followers.get(accountId)?.size) return;
    if (this.reading.has(accountId)) {
      this.readAgain.add(accountId);
      return;
    }
    const run = (async () => {
      do {
        this.readAgain.delete(accountId);
        await this.read(accountId);
      } while (this.readAgain.has(accountId));
    })()
      .catch((err: unknown) => this.logger.error({ err, accountId }, 'event streams: reading new events failed'))
      .finally(() => this.reading.delete(accountId));
    this.reading.set(accountId, run);
  }

  private async read(accountId: string): Promise<void> {
    const open = this.followers.get(accountId);
    if (!open?.size) return;
    const ctx = { ...this.ctx, accountId };
    const scope = scopeOf(ctx);
    if (await eventsRepository.hasUnpositioned(scope))
      await transaction(ctx, (tx) => eventsRepository.assignPositions(scopeOf(tx)));
    // The last stream may have ended meanwhile: nobody to read for (and no lowest position).
    if (open.size === 0) return;
    let from = Math.min(...[...open].map((follower) => follower.position));
    for (;;) {
      const rows = await eventsRepository.after(scope, from, BATCH);
      for (const row of rows) {
        const event = toEvent(row);
        for (const follower of open) follower.offer(event, row.position as number);
      }
      if (rows.length < BATCH) return;
      from = (rows.at(-1)?.position as number) ?? from;
    }
  }
}
