import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { PLAN_RATE_LIMITS, accountsService } from '../services/accounts.js';
import { ensureBuilt } from '../testing/built-bin.js';
import { type TestDatabase, createTestDatabase, postgresAvailable } from '../testing/databases.js';
import {
  type Answer,
  type ServerProcess,
  binariesAvailable,
  describeAnswer,
  send,
  sleep,
  startRedis,
  startServer,
  stopAll,
} from './processes.js';

/**
 * The per-account limit holds across server processes that share a store: 2×L requests sent at
 * once through two `convo-server serve` processes let exactly L through.
 */

const L = PLAN_RATE_LIMITS.free;
const HAVE_POSTGRES = await postgresAvailable();
const HAVE_REDIS = HAVE_POSTGRES && binariesAvailable(['redis-server'], 'the Redis rate-limit test');

interface Setup {
  testDb: TestDatabase;
  keys: { a: string; b: string };
}

/** A fresh Postgres database with two `free` accounts (60 rpm), one full-access key each. */
async function setUp(): Promise<Setup> {
  const testDb = await createTestDatabase('postgres');
  const database: DatabaseHandle = openDatabase(testDb.url);
  try {
    await migrateToLatest(database.db);
    const key = async (name: string) => {
      const account = await accountsService.createAccount({ database }, { name, plan: 'free' });
      return (await accountsService.createKey({ database }, { accountId: account.id, type: 'full_access' })).key;
    };
    return { testDb, keys: { a: await key('Free A'), b: await key('Free B') } };
  } finally {
    await database.destroy();
  }
}

interface Sent {
  server: number;
  key: string;
  answer: Answer;
}

/** 2×L requests per key, all in flight at once, alternating between the servers. */
async function burst(servers: ServerProcess[], keys: string[]): Promise<Sent[]> {
  const request = (server: number, key: string) =>
    send((servers[server] as ServerProcess).origin, 'GET', '/v1/contacts?limit=1', { key }).then((answer) => ({
      server,
      key,
      answer,
    }));
  // Each server counts one request of each account first, so that both are known to share the
  // count; the rest of the 2×L go at once, alternating between the servers.
  const first: Sent[] = [];
  for (const key of keys) for (const server of servers.keys()) first.push(await request(server, key));
  const pending: Promise<Sent>[] = [];
  for (let i = servers.length; i < 2 * L; i++) for (const key of keys) pending.push(request(i % servers.length, key));
  return [...first, ...(await Promise.all(pending))];
}

const of = (sent: Sent[], key: string) => sent.filter((s) => s.key === key).map((s) => s.answer);

/** Exactly L answered 200, each with a distinct X-RateLimit-Remaining L-1…0, and L answered 429. */
function expectExactlyL(answers: Answer[]) {
  for (const answer of answers) expect([200, 429], describeAnswer(answer)).toContain(answer.status);
  const ok = answers.filter((a) => a.status === 200);
  const limited = answers.filter((a) => a.status === 429);
  expect(ok).toHaveLength(L);
  expect(limited).toHaveLength(L);
  // One shared counter: every admitted request saw a different count.
  const remaining = ok.map((a) => Number(a.headers?.get('x-ratelimit-remaining'))).sort((x, y) => x - y);
  expect(remaining).toEqual(Array.from({ length: L }, (_, i) => i));
  for (const answer of ok) expect(answer.headers?.get('x-ratelimit-limit')).toBe(String(L));
  for (const answer of limited) {
    expect(answer.body?.error?.code).toBe('rate_limited');
    expect(Number(answer.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(answer.headers?.get('x-ratelimit-remaining')).toBe('0');
  }
}

describe.skipIf(!HAVE_POSTGRES)('rate limits shared by two server processes through Postgres', () => {
  let setup: Setup | undefined;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    ensureBuilt();
    setup = await setUp();
    const started = await Promise.all([
      startServer({ DATABASE_URL: setup.testDb.url }, 'pg-1'),
      startServer({ DATABASE_URL: setup.testDb.url }, 'pg-2'),
    ]);
    servers.push(...started);
  });
  afterAll(async () => {
    await stopAll();
    await setup?.testDb.drop();
  });

  it('lets exactly L of 2×L concurrent requests through, per account, whichever server answers', async () => {
    const { a, b } = (setup as Setup).keys;
    const sent = await burst(servers, [a, b]);
    expectExactlyL(of(sent, a));
    // The other account was limited just as much, and not a request more: the quotas are separate.
    expectExactlyL(of(sent, b));
    // Both processes admitted requests of each account, and both are still up.
    for (const [index, server] of servers.entries()) {
      for (const key of [a, b])
        expect(sent.some((s) => s.server === index && s.key === key && s.answer.status === 200)).toBe(true);
      expect(server.running(), server.stderr()).toBe(true);
    }
  });
});

describe.skipIf(!HAVE_REDIS)('rate limits shared by two server processes through Redis', () => {
  let setup: Setup | undefined;
  let redis: Awaited<ReturnType<typeof startRedis>> | undefined;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    ensureBuilt();
    setup = await setUp();
    redis = await startRedis();
    const env = { DATABASE_URL: setup.testDb.url, REDIS_URL: redis.url };
    servers.push(...(await Promise.all([startServer(env, 'redis-1'), startServer(env, 'redis-2')])));
  });
  afterAll(async () => {
    await stopAll();
    await setup?.testDb.drop();
  });

  it('lets exactly L of 2×L concurrent requests through, per account', async () => {
    const { a, b } = (setup as Setup).keys;
    const sent = await burst(servers, [a, b]);
    expectExactlyL(of(sent, a));
    expectExactlyL(of(sent, b));
  });

  it('keeps answering 200 or 429, never 5xx, once Redis is gone (the in-memory insurance limiter takes over)', async () => {
    const { a, b } = (setup as Setup).keys;
    await redis?.kill();
    const sent: Sent[] = [];
    const pending: Promise<void>[] = [];
    // A couple of seconds of steady traffic, 16 requests every 100 ms over both accounts and servers:
    // 100 per account and server, more than L, so the insurance limiter has to refuse some too.
    // The pace is the traffic under test, not a wait for the servers.
    for (let round = 0, i = 0; round < 25; round++, await sleep(100)) {
      for (let n = 0; n < 16; n++, i++) {
        const server = i % 2;
        const key = Math.floor(i / 2) % 2 ? b : a;
        pending.push(
          send((servers[server] as ServerProcess).origin, 'GET', '/v1/contacts?limit=1', {
            key,
            timeoutMs: 5_000,
          }).then((answer) => void sent.push({ server, key, answer })),
        );
      }
    }
    await Promise.all(pending);

    expect(sent).toHaveLength(400);
    for (const { answer } of sent) {
      expect(answer.error, describeAnswer(answer)).toBeUndefined();
      expect([200, 429], describeAnswer(answer)).toContain(answer.status);
      expect(answer.ms, describeAnswer(answer)).toBeLessThan(3_000);
      if (answer.status === 429) expect(answer.body?.error?.code, describeAnswer(answer)).toBe('rate_limited');
    }
    // Each process now limits on its own, at the account's size: some requests pass, never more than L.
    for (const server of [0, 1]) {
      for (const key of [a, b]) {
        const admitted = sent.filter((s) => s.server === server && s.key === key && s.answer.status === 200);
        expect(admitted.length).toBeGreaterThan(0);
        expect(admitted.length).toBeLessThanOrEqual(L);
      }
    }
    expect(sent.some((s) => s.answer.status === 429)).toBe(true);
    for (const { answer } of sent.filter((s) => s.answer.status === 200)) {
      expect(answer.headers?.get('x-ratelimit-limit')).toBe(String(L));
    }
    for (const server of servers) expect(server.running(), server.stderr()).toBe(true);
  });
});
