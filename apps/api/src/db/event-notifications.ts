import { createRequire } from 'node:module';
import type pg from 'pg';
import type { DatabaseHandle, DatabaseLogger } from './database.js';

/**
 * How a process learns that new events were committed, whichever process wrote them, so event
 * streams wake at once instead of querying on a timer: Postgres' LISTEN/NOTIFY, SQLite's
 * `data_version` (another connection committed) and a counter of this process' own writes. The
 * events table stays the truth: a notification only says where to look, and a missed one is
 * made good by looking everywhere (after reconnecting, and on a slow timer).
 */

/** The NOTIFY channel; the payload is the account id. */
export const EVENTS_CHANNEL = 'convo_events';

/** How often SQLite's streams look for commits: the wake-up latency there. */
const SQLITE_WATCH_MS = 50;
/** Postgres: how often every followed account is looked at anyway, should a notification have been lost. */
const POSTGRES_SWEEP_MS = 5_000;
/** Waits before connecting the listener again after it failed, doubling up to the last. */
const RECONNECT_MS = [100, 500, 1_000, 5_000];

let writtenHere = 0;

/** Called by the events repository when this process wrote events (SQLite: no other signal reaches our own streams). */
export const eventsWrittenHere = (): void => {
  writtenHere++;
};

export interface EventNotifications {
  close(): Promise<void>;
}

/**
 * Calls `onEvents(accountId)` when an account has new events, or `onEvents(undefined)` when any
 * account may have (SQLite's watch, Postgres after a reconnect and on its sweep).
 */
export function listenForEvents(
  database: DatabaseHandle,
  onEvents: (accountId: string | undefined) => void,
  logger: DatabaseLogger,
): EventNotifications {
  if (!database.pgPool) return watchSqlite(database, onEvents);
  return listenPostgres(database.pgPool, onEvents, logger);
}

function watchSqlite(database: DatabaseHandle, onEvents: (accountId: undefined) => void): EventNotifications {
  let seen = { elsewhere: database.commitsElsewhere?.(), here: writtenHere };
  const timer = setInterval(() => {
    const now = { elsewhere: database.commitsElsewhere?.(), here: writtenHere };
    if (now.elsewhere === seen.elsewhere && now.here === seen.here) return;
    seen = now;
    onEvents(undefined);
  }, SQLITE_WATCH_MS);
  timer.unref();
  return { close: async () => clearInterval(timer) };
}

function listenPostgres(
  pool: pg.Pool,
  onEvents: (accountId: string | undefined) => void,
  logger: DatabaseLogger,
): EventNotifications {
  const { Client } = createRequire(import.meta.url)('pg') as typeof pg;
  let client: pg.Client | undefined;
  let closed = false;
  let failures = 0;
  let retry: NodeJS.Timeout | undefined;

  // A connection of its own, outside the pool: LISTEN holds it for the process' life.
  const connect = async () => {
    const next = new Client(pool.options);
    next.on('notification', (message) => onEvents(message.payload || undefined));
    next.on('error', (err) => {
      logger.warn({ err }, 'the event listener lost its Postgres connection');
      next.end().catch(() => {});
      if (client === next) reconnect();
    });
    next.on('end', () => {
      if (client === next) reconnect();
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${EVENTS_CHANNEL}`);
    } catch (err) {
      next.end().catch(() => {});
      if (!closed) {
        logger.warn({ err }, 'the event listener could not connect to Postgres');
        reconnect();
      }
      return;
    }
    if (closed) {
      await next.end();
      return;
    }
    client = next;
    failures = 0;
    // Whatever was committed while no one listened.
    onEvents(undefined);
  };
  const reconnect = () => {
    client = undefined;
    if (closed) return;
    const wait = RECONNECT_MS[Math.min(failures++, RECONNECT_MS.length - 1)];
    retry = setTimeout(() => void connect(), wait);
    retry.unref();
  };

  void connect();
  const sweep = setInterval(() => onEvents(undefined), POSTGRES_SWEEP_MS);
  sweep.unref();
  return {
    close: async () => {
      closed = true;
      clearInterval(sweep);
      clearTimeout(retry);
      await client?.end().catch(() => {});
    },
  };
}
