import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ipaddr from 'ipaddr.js';
import { parseDatabaseUrl } from './db/database.js';
import { developmentSecretKey, parseSecretKey } from './secret-box.js';
import { type Settings, defaultSettings } from './settings.js';

/** Configuration from the environment: this module alone reads process.env; the rest receives arguments. */
export interface Env {
  nodeEnv: 'development' | 'test' | 'production';
  port: number;
  host: string;
  /** Where clients reach the API (CONVO_PUBLIC_URL, else from HOST and PORT): the URL documents and commands show. */
  publicUrl: string;
  databaseUrl: string | undefined;
  /** Postgres connections per process (DATABASE_POOL_SIZE; default: openDatabase's). */
  databasePoolSize: number | undefined;
  /** Redis for the shared rate-limit counters (REDIS_URL); without it, the database's store. */
  redisUrl: string | undefined;
  /** What every Redis key begins with (CONVO_REDIS_PREFIX, default `convo:`), so deployments can share one Redis. */
  redisPrefix: string;
  /**
   * How long `serve` keeps answering after SIGTERM with /readyz at 503 (CONVO_DRAIN_SECONDS): long enough for a
   * load balancer's health checks to take it out.
   */
  drainMs: number;
  logLevel: string;
  /** Run the worker inside `serve` (CONVO_WORKER, default true). */
  workerInServe: boolean;
  /**
   * How long a worker's claim on a job lasts without renewal (CONVO_WORKER_LEASE): how soon a dead worker's jobs
   * go to others.
   */
  workerLeaseMs: number;
  settings: Settings;
}

const flag = (value: string | undefined, fallback: boolean): boolean => {
  if (value === undefined || value === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(value)) return true;
  if (/^(0|false|no|off)$/i.test(value)) return false;
  throw new Error(`Expected true or false, got "${value}"`);
};

export function readEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const nodeEnv = source.NODE_ENV === 'production' || source.NODE_ENV === 'test' ? source.NODE_ENV : 'development';
  const port = Number(source.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`PORT must be a port number, got "${source.PORT}"`);
  const databasePoolSize = source.DATABASE_POOL_SIZE ? Number(source.DATABASE_POOL_SIZE) : undefined;
  if (databasePoolSize !== undefined && (!Number.isInteger(databasePoolSize) || databasePoolSize < 1)) {
    throw new Error(
      `DATABASE_POOL_SIZE must be a whole number of connections, 1 or more, got "${source.DATABASE_POOL_SIZE}"`,
    );
  }
  const host = source.HOST || '127.0.0.1';
  const publicUrl = publicUrlOf(source.CONVO_PUBLIC_URL, host, port);
  const databaseUrl = source.DATABASE_URL || undefined;
  return {
    nodeEnv,
    port,
    host,
    publicUrl,
    databaseUrl,
    databasePoolSize,
    redisUrl: source.REDIS_URL || undefined,
    redisPrefix: source.CONVO_REDIS_PREFIX ?? 'convo:',
    // Test servers stop at once unless a test asks for a drain: nothing balances them.
    drainMs: source.CONVO_DRAIN_SECONDS
      ? seconds('CONVO_DRAIN_SECONDS', source.CONVO_DRAIN_SECONDS) * 1000
      : nodeEnv === 'test'
        ? 0
        : 10_000,
    logLevel: source.LOG_LEVEL || (nodeEnv === 'test' ? 'silent' : 'info'),
    workerInServe: flag(source.CONVO_WORKER, true),
    workerLeaseMs: source.CONVO_WORKER_LEASE
      ? (parseSchedule('CONVO_WORKER_LEASE', source.CONVO_WORKER_LEASE)[0] as number)
      : 15_000,
    settings: defaultSettings({
      // Always in development and test; elsewhere only when asked for.
      allowPrivateWebhooks: nodeEnv !== 'production' || flag(source.CONVO_ALLOW_PRIVATE_WEBHOOKS, false),
      sandboxEnabled: flag(source.CONVO_SANDBOX, nodeEnv !== 'production'),
      ...(source.CONVO_WEBHOOK_RETRY_SCHEDULE
        ? { webhookRetryScheduleMs: parseSchedule('CONVO_WEBHOOK_RETRY_SCHEDULE', source.CONVO_WEBHOOK_RETRY_SCHEDULE) }
        : {}),
      ...(source.CONVO_CHANNEL_SEND_RETRY_SCHEDULE
        ? {
            channelSendRetryScheduleMs: parseSchedule(
              'CONVO_CHANNEL_SEND_RETRY_SCHEDULE',
              source.CONVO_CHANNEL_SEND_RETRY_SCHEDULE,
            ),
          }
        : {}),
      ...(source.CONVO_CHANNEL_SENDS_PER_SECOND
        ? {
            channelSendsPerSecond: positiveNumber(
              'CONVO_CHANNEL_SENDS_PER_SECOND',
              source.CONVO_CHANNEL_SENDS_PER_SECOND,
            ),
          }
        : {}),
      ...(source.CONVO_REQUEST_LOG_DAYS
        ? { requestLogDays: positiveNumber('CONVO_REQUEST_LOG_DAYS', source.CONVO_REQUEST_LOG_DAYS) }
        : {}),
      ...(source.CONVO_FILES_DIR ? { filesDir: resolve(source.CONVO_FILES_DIR) } : {}),
      ...(source.CONVO_GRAPH_API_URL
        ? { graphApiUrl: httpUrl('CONVO_GRAPH_API_URL', source.CONVO_GRAPH_API_URL) }
        : {}),
      ...(source.CONVO_GRAPH_API_VERSION ? { graphApiVersion: graphVersion(source.CONVO_GRAPH_API_VERSION) } : {}),
      publicUrl,
      secretKey: secretKeyOf(source.CONVO_SECRET_KEY, nodeEnv, databaseUrl),
      secureCookies: nodeEnv === 'production',
      consoleDir: source.CONVO_CONSOLE_DIR || consoleBuild(),
      trustedProxies: trustedProxiesOf(source.CONVO_TRUSTED_PROXIES),
    }),
  };
}

/**
 * CONVO_SECRET_KEY, required in production; elsewhere a key kept beside the SQLite file, else in `data/`.
 * Read when first needed, so commands that seal nothing need no key.
 */
function secretKeyOf(
  value: string | undefined,
  nodeEnv: Env['nodeEnv'],
  databaseUrl: string | undefined,
): () => Buffer {
  let key: Buffer | undefined;
  return () => {
    if (key) return key;
    if (value) key = parseSecretKey(value);
    else if (nodeEnv === 'production')
      throw new Error('CONVO_SECRET_KEY is required when NODE_ENV=production (openssl rand -hex 32)');
    else {
      const target = parseDatabaseUrl(databaseUrl);
      key = developmentSecretKey(
        target.dialect === 'sqlite' && target.path !== ':memory:' ? dirname(target.path) : 'data',
      );
    }
    return key;
  };
}

const positiveNumber = (name: string, value: string): number => {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new Error(`${name} must be a positive number, got "${value}"`);
  return number;
};

/** A duration in seconds, 0 or more (fractions allowed). */
const seconds = (name: string, value: string): number => {
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number < 0)
    throw new Error(`${name} must be a number of seconds, 0 or more, got "${value}"`);
  return number;
};

const httpUrl = (name: string, value: string): string => {
  if (!/^https?:\/\/[^/]/.test(value) || !URL.canParse(value))
    throw new Error(`${name} must be an http(s) URL, got "${value}"`);
  return value.replace(/\/+$/, '');
};

const graphVersion = (value: string): string => {
  if (!/^v\d+\.\d+$/.test(value)) throw new Error(`CONVO_GRAPH_API_VERSION must look like v23.0, got "${value}"`);
  return value;
};

/**
 * CONVO_TRUSTED_PROXIES: comma-separated addresses, CIDR ranges and proxy-addr's named ranges. Never "any" nor a
 * hop count: a client could then claim any address it likes.
 */
function trustedProxiesOf(value: string | undefined): string | false {
  if (!value?.trim()) return false;
  const entries = value.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    const named = entry === 'loopback' || entry === 'linklocal' || entry === 'uniquelocal';
    if (!named && !isAddress(entry) && !isCidr(entry)) {
      throw new Error(
        `CONVO_TRUSTED_PROXIES: "${entry}" is not an address, a CIDR range, loopback, linklocal or uniquelocal`,
      );
    }
  }
  return entries.join(',');
}

/** Written out in full: ipaddr.js would also take `1` or `0x7f.1` for an IPv4 address. */
const isAddress = (entry: string): boolean => ipaddr.IPv4.isValidFourPartDecimal(entry) || ipaddr.IPv6.isValid(entry);

const isCidr = (entry: string): boolean => {
  const [address, bits] = entry.split('/');
  if (address === undefined || bits === undefined || !isAddress(address)) return false;
  try {
    ipaddr.parseCIDR(entry);
    return true;
  } catch {
    return false;
  }
};

/** CONVO_PUBLIC_URL without a trailing `/` or `/v1`, else the address the server listens on. */
function publicUrlOf(value: string | undefined, host: string, port: number): string {
  if (value) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new Error(`CONVO_PUBLIC_URL must be an http(s) URL, got "${value}"`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new Error(`CONVO_PUBLIC_URL must be an http(s) URL, got "${value}"`);
    return value.replace(/\/+$/, '').replace(/\/v1$/, '');
  }
  // A wildcard address is where the server listens, not where a client connects.
  const reachable = host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return `http://${reachable}:${port}`;
}

/** Comma-separated durations such as `5s,5m,250ms` (a bare number is milliseconds), in milliseconds. */
function parseSchedule(name: string, value: string): number[] {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  return value.split(',').map((part) => {
    const match = /^\s*(\d+)\s*(ms|s|m|h)?\s*$/.exec(part);
    if (!match) throw new Error(`${name}: "${part}" is not a duration like 5s, 5m or 250ms`);
    return Number(match[1]) * (units[match[2] ?? 'ms'] as number);
  });
}

/** apps/console/dist in this workspace, found from this module, which is one level under apps/api in src/ or dist/. */
function consoleBuild(): string | undefined {
  const dir = fileURLToPath(new URL('../../console/dist', import.meta.url));
  return existsSync(dir) ? dir : undefined;
}
