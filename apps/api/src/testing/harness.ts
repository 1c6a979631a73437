import { randomUUID } from 'node:crypto';
import { type EndpointDefinition, ErrorBody, type OperationId, endpoints } from '@convo/core';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, vi } from 'vitest';
import type * as z from 'zod';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { buildServer } from '../http/server.js';
import { accountsService } from '../services/accounts.js';
import { type Settings, defaultSettings } from '../settings.js';
import { Worker, jobHandlers } from '../worker/worker.js';
import { type TestDatabase, createTestDatabase, postgresAvailable } from './databases.js';

export interface TestKeys {
  /** Account A. */
  full: string;
  readOnly: string;
  webhook: string;
  revoked: string;
  /** Account B: another tenant. */
  otherFull: string;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined for an empty body. */
  body: any;
  text: string;
}

export interface RequestOptions {
  /** A key, or null for no Authorization header. Defaults to account A's full key. */
  key?: string | null;
  body?: unknown;
  /** Sent as is instead of JSON-encoding `body`. */
  rawBody?: string | Buffer;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  /**
   * A POST's Idempotency-Key: a new one by default, as the SDKs send, so every write runs inside
   * the transaction an idempotent request holds; null to send none.
   */
  idempotencyKey?: string | null;
}

/** A real server over HTTP on a fresh database, with two accounts and keys of every type. */
export interface TestServer {
  dialect: 'sqlite' | 'postgres';
  baseUrl: string;
  keys: TestKeys;
  accountId: string;
  otherAccountId: string;
  database: DatabaseHandle;
  /** The database's URL, for a second connection to it (another process's view). */
  databaseUrl: string;
  settings: Settings;
  /** Every route the server mounted (its onRoute table), so that a new route is tested without being listed. */
  routes: readonly { method: string; url: string }[];
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /** Starts a background worker on this server's database (stopped by close()). */
  startWorker(options?: { pollIntervalMs?: number; leaseMs?: number }): Promise<Worker>;
  /**
   * Runs every job due now to completion, and the jobs those enqueue, until none is due; returns
   * how many ran. Due jobs a background worker holds are waited for. "Now" is `Date`'s, so under
   * `vi.useFakeTimers({ toFake: ['Date'] })` a test moves the clock and drains instead of sleeping.
   */
  drainJobs(): Promise<number>;
  /** Writes the request log's pending lines now (the server writes them in batches, within a second). */
  flushRequestLog(): Promise<void>;
  /**
   * Runs jobs until `check` returns something other than undefined or false, and returns it: drains
   * the queue, and when nothing is due moves the stopped clock (`vi.useFakeTimers({ toFake: ['Date'] })`)
   * on to the next job.
   */
  runJobsUntil<T>(check: () => Promise<T | undefined | false>): Promise<T>;
  close(): Promise<void>;
}

/** Test servers allow loopback webhooks, serve the sandbox and retry deliveries quickly. */
export const testSettings = (overrides: Partial<Settings> = {}): Settings =>
  defaultSettings({
    allowPrivateWebhooks: true,
    sandboxEnabled: true,
    webhookRetryScheduleMs: [200, 400, 800],
    webhookTimeoutMs: 2_000,
    // The suites send thousands of failing requests from one address; the guard has its own tests.
    authFailuresPerMinute: 1_000_000,
    ...overrides,
  });

/** Accounts of the test servers: enterprise with a limit no suite reaches (rate limits have their own tests). */
export const TEST_ACCOUNT_RPM = 1_000_000;

export async function startTestServer(
  dialect: 'sqlite' | 'postgres',
  givenSettings: Settings = testSettings(),
): Promise<TestServer> {
  // Its own copy: the public URL below is this server's.
  const settings: Settings = { ...givenSettings };
  const testDatabase: TestDatabase = await createTestDatabase(dialect);
  const database = openDatabase(testDatabase.url);
  await migrateToLatest(database.db);
  // TEST_SERVER_LOG=1 prints the servers' error lines (the cause of a 500, which its body never says).
  const logger = process.env.TEST_SERVER_LOG === '1' ? { level: 'error' } : false;
  const app: FastifyInstance = await buildServer({ database, settings, logger });
  const workers: Worker[] = [];
  // Never started: drainJobs() runs it one claim at a time (Worker.runDue).
  const drainer = new Worker({ database, handlers: jobHandlers({ database, settings }) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  const baseUrl = `http://127.0.0.1:${address.port}/v1`;
  // Only now is the port known: channels' webhook_url names it.
  settings.publicUrl = `http://127.0.0.1:${address.port}`;

  const a = await accountsService.createAccount(
    { database },
    {
      name: 'Account A',
      plan: 'enterprise',
      rateLimitRpm: TEST_ACCOUNT_RPM,
    },
  );
  const b = await accountsService.createAccount(
    { database },
    {
      name: 'Account B',
      plan: 'enterprise',
      rateLimitRpm: TEST_ACCOUNT_RPM,
    },
  );
  const key = async (accountId: string, type: 'full_access' | 'read_only' | 'webhook') =>
    (await accountsService.createKey({ database }, { accountId, type })).key;
  const revoked = await accountsService.createKey({ database }, { accountId: a.id, type: 'full_access' });
  await accountsService.revokeKey({ database }, revoked.id);
  const keys: TestKeys = {
    full: await key(a.id, 'full_access'),
    readOnly: await key(a.id, 'read_only'),
    webhook: await key(a.id, 'webhook'),
    revoked: revoked.key,
    otherFull: await key(b.id, 'full_access'),
  };

  const drainJobs = async (): Promise<number> => {
    let ran = 0;
    for (let claim = 0; claim < MAX_DRAIN_CLAIMS; claim++) {
      const claimed = await drainer.runDue();
      ran += claimed;
      if (claimed > 0) continue;
      if (!(await dueJobHeld(database))) return ran;
      await vi.waitFor(
        async () => {
          if (await dueJobHeld(database)) throw new Error('a background worker still holds a due job');
        },
        { timeout: 15_000, interval: 10 },
      );
    }
    throw new Error(`jobs still due after ${MAX_DRAIN_CLAIMS} claims: a job keeps rescheduling itself as due`);
  };

  return {
    dialect,
    baseUrl,
    databaseUrl: testDatabase.url,
    keys,
    accountId: a.id,
    otherAccountId: b.id,
    database,
    settings,
    routes: app.routeTable,
    flushRequestLog: () => app.requestLog.flush(),
    async startWorker(options = {}) {
      const worker = new Worker({
        database,
        handlers: jobHandlers({ database, settings }),
        pollIntervalMs: 50,
        ...options,
      });
      await worker.start();
      workers.push(worker);
      return worker;
    },
    drainJobs,
    async runJobsUntil(check) {
      for (let round = 0; round < MAX_DRAIN_CLAIMS; round++) {
        const value = await check();
        if (value !== undefined && value !== false) return value;
        if ((await drainJobs()) > 0) continue;
        const next = await database.db
          .selectFrom('jobs')
          .select('run_at')
          .where('locked_by', 'is', null)
          .orderBy('run_at')
          .limit(1)
          .executeTakeFirst();
        if (!next) throw new Error('the condition does not hold and the queue is empty');
        if (!vi.isFakeTimers())
          throw new Error(
            `the condition does not hold and the next job is due at ${next.run_at}: stop the clock to reach it`,
          );
        vi.setSystemTime(Math.max(Date.now(), Date.parse(next.run_at)));
      }
      throw new Error(`the condition does not hold after ${MAX_DRAIN_CLAIMS} rounds of jobs`);
    },
    async request(method, path, options = {}) {
      const url = new URL(baseUrl + path);
      for (const [name, value] of Object.entries(options.query ?? {}))
        if (value !== undefined) url.searchParams.set(name, String(value));
      const headers: Record<string, string> = { ...options.headers };
      const keyToUse = options.key === undefined ? keys.full : options.key;
      if (keyToUse !== null) headers.authorization ??= `Bearer ${keyToUse}`;
      const idempotencyKey = options.idempotencyKey === undefined ? `test_${randomUUID()}` : options.idempotencyKey;
      const keySent = Object.keys(headers).some((name) => name.toLowerCase() === 'idempotency-key');
      if (method === 'POST' && idempotencyKey !== null && !keySent) headers['idempotency-key'] = idempotencyKey;
      let body: string | Buffer | undefined;
      if (options.rawBody !== undefined) body = options.rawBody;
      else if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await fetch(url, { method, headers, body });
      const text = await answerText(response);
      const json = text && !isEventStream(response.headers);
      return { status: response.status, headers: response.headers, text, body: json ? JSON.parse(text) : undefined };
    },
    async close() {
      for (const worker of workers) await worker.stop();
      await app.close();
      await database.destroy();
      await testDatabase.drop();
    },
  };
}

const isEventStream = (headers: Headers) => headers.get('content-type')?.startsWith('text/event-stream') ?? false;

/**
 * A response's body as text; of an event stream, which does not end, its first frame (the comment
 * it opens with), after which the stream is closed.
 */
export async function answerText(response: Response): Promise<string> {
  if (!isEventStream(response.headers) || !response.body) return response.text();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  while (!text.includes('\n\n')) {
    const read = await reader.read();
    if (read.done) break;
    text += read.value;
  }
  await reader.cancel();
  return text;
}

/**
 * Claims drainJobs() makes at most (and rounds of runJobsUntil()): past them a job must be rescheduling itself forever.
 */
const MAX_DRAIN_CLAIMS = 1_000;

/**
 * A job is due now and a worker's lease holds it: running, or finished and not yet deleted by the worker's next claim.
 */
async function dueJobHeld(database: DatabaseHandle): Promise<boolean> {
  const now = new Date().toISOString();
  const held = await database.db
    .selectFrom('jobs')
    .select('id')
    .where('run_at', '<=', now)
    .where('locked_until', 'is not', null)
    .where('locked_until', '>=', now)
    .limit(1)
    .executeTakeFirst();
  return held !== undefined;
}

/**
 * Revokes a key as another process (the operator command) does: on its own connection, without this process's services.
 */
export async function revokeKeyElsewhere(databaseUrl: string, keyId: string): Promise<void> {
  const elsewhere = openDatabase(databaseUrl);
  try {
    await elsewhere.db
      .updateTable('api_keys')
      .set({ revoked_at: new Date().toISOString() })
      .where('id', '=', keyId)
      .execute();
  } finally {
    await elsewhere.destroy();
  }
}

/** Waits (vi.waitFor) until `check` returns something other than undefined or false, and returns it. */
export function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeout = 10_000,
): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await check();
      if (value === undefined || value === false) throw new Error('not yet');
      return value;
    },
    { timeout, interval: 25 },
  );
}

/** Asserts a success status and parses the body with the contract schema it must follow. */
export function expectBody<S extends z.ZodType>(response: TestResponse, status: number, schema: S): z.output<S> {
  expect(response.status, response.text).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const parsed = schema.safeParse(response.body);
  if (!parsed.success) throw new Error(`Response does not match its schema: ${parsed.error.message}\n${response.text}`);
  return parsed.data;
}

/** Asserts an error response of the contract's shape; field and constraint when given. */
export function expectError(
  response: TestResponse,
  status: number,
  code: z.infer<typeof ErrorBody>['error']['code'],
  details?: { field: string; constraint: string },
) {
  expect(response.status, response.text).toBe(status);
  const body = ErrorBody.parse(response.body);
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(0);
  if (details) {
    expect(body.error.details, response.text).toMatchObject(details);
  }
  return body;
}

/** An error of the contract's shape and nothing else: `{error: {code, message, details?}}`, JSON. */
export function expectExactError(
  response: TestResponse,
  status: number,
  code: z.infer<typeof ErrorBody>['error']['code'],
  details?: { field: string; constraint: string },
) {
  const body = expectError(response, status, code, details);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(Object.keys(response.body)).toEqual(['error']);
  for (const key of Object.keys(response.body.error)) expect(['code', 'message', 'details']).toContain(key);
  if (response.body.error.details !== undefined) {
    for (const key of Object.keys(response.body.error.details))
      expect(['field', 'constraint', 'issues', 'existing_id']).toContain(key);
  }
  return body;
}

/** SQLite always; Postgres when reachable (an unreachable one fails the run under CI=true). */
export const ACTIVE_DIALECTS: readonly ('sqlite' | 'postgres')[] = (await postgresAvailable())
  ? ['sqlite', 'postgres']
  : ['sqlite'];

/**
 * Declares the same tests once per database: each gets its own server on a fresh database.
 * `server()` is valid inside tests and hooks.
 */
export function describeEachDialect(name: string, body: (server: () => TestServer) => void, settings?: Settings): void {
  for (const dialect of ACTIVE_DIALECTS) describeDialect(dialect, name, body, settings);
}

/** The tests of describeEachDialect on one database, declared only when that database is active. */
export function describeDialect(
  dialect: 'sqlite' | 'postgres',
  name: string,
  body: (server: () => TestServer) => void,
  settings?: Settings,
): void {
  if (!ACTIVE_DIALECTS.includes(dialect)) return;
  describe(`${name} [${dialect}]`, () => {
    let current: TestServer | undefined;
    beforeAll(async () => {
      current = await startTestServer(dialect, settings);
    });
    afterAll(async () => {
      await current?.close();
    });
    body(() => {
      if (!current) throw new Error('the test server is not started');
      return current;
    });
  });
}

/** How a test reaches an operation: its REST route, or its procedure at /trpc. */
export type Transport = 'rest' | 'trpc';
export const TRANSPORTS: readonly Transport[] = ['rest', 'trpc'];

/** The transports of an operation: tRPC carries JSON, so an upload or a download is REST's alone. */
export const transportsOf = (op: EndpointDefinition): readonly Transport[] =>
  op.upload || op.download || op.stream ? ['rest'] : TRANSPORTS;

/**
 * Calls an operation through /trpc with what a REST call would send (the `params` its path names
 * as the input's, `query`, `body` or `rawBody` as the whole input) and reads the answer as REST's: the
 * contract's error body from inside tRPC's envelope, or the data of a success.
 */
export async function requestOverTrpc(
  server: TestServer,
  operationId: OperationId,
  params: Record<string, string>,
  options: RequestOptions = {},
): Promise<TestResponse> {
  const operation: EndpointDefinition = endpoints[operationId];
  const headers: Record<string, string> = { ...options.headers };
  const keyToUse = options.key === undefined ? server.keys.full : options.key;
  if (keyToUse !== null) headers.authorization ??= `Bearer ${keyToUse}`;
  const named = Object.fromEntries(Object.entries(params).filter(([name]) => operation.path.includes(`:${name}`)));
  const input = {
    ...(operation.params ? { params: named } : {}),
    ...(options.query ? { query: options.query } : {}),
    ...(options.body !== undefined ? { body: options.body } : {}),
  };
  const url = new URL(`/trpc/${operationId}`, server.baseUrl);
  let response: Response;
  if (operation.method === 'GET') {
    url.searchParams.set('input', JSON.stringify(input));
    response = await fetch(url, { headers });
  } else {
    const body = options.rawBody ?? JSON.stringify(input);
    if (options.rawBody === undefined) headers['content-type'] ??= 'application/json';
    response = await fetch(url, { method: 'POST', headers, body });
  }
  const text = await response.text();
  const envelope = text
    ? (JSON.parse(text) as { result?: { data?: unknown }; error?: { data?: { body?: unknown } } })
    : undefined;
  const body = envelope?.error ? envelope.error.data?.body : envelope?.result?.data;
  return {
    status: response.status,
    headers: response.headers,
    text: body === undefined ? '' : JSON.stringify(body),
    body,
  };
}
