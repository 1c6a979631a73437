import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, type IncomingHttpHeaders, type Server, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { RateLimits } from '../edge/rate-limits.js';
import { API_DIR, ensureBuilt } from '../testing/built-bin.js';
import {
  type Answer,
  type PostgresCluster,
  type RedisProcess,
  type ServerProcess,
  type WorkerProcess,
  binariesAvailable,
  convoServer,
  describeAnswer,
  NODE_FLAGS,
  findHaproxy,
  freePort,
  postgresClusterAvailable,
  send,
  startHaproxy,
  startPostgresCluster,
  startRedis,
  startServer,
  startWorkerProcess,
  stopAll,
  waitFor,
} from './processes.js';

/**
 * The fleet drill (CONTRACT.md, Operations): three API processes and two workers on a Postgres and
 * a Redis of their own, behind HAProxy configured as README.md shows (./haproxy.cfg), all run as
 * in production (NODE_ENV=production, migrated by `convo-server migrate` alone). Under load, one
 * API process is drained by SIGTERM and one worker is killed with SIGKILL; then the shared rate
 * limit, key revocation and every acknowledged write are checked on every instance.
 */

const HAPROXY_CONFIG = join(API_DIR, 'src', 'resilience', 'haproxy.cfg');
/** Long enough for HAProxy's two failed checks a second apart (haproxy.cfg), short for the drill. */
const DRAIN_SECONDS = 4;
/** The workers' default lease (env.ts): a dead worker's jobs are taken within it. */
const LEASE_MS = 15_000;
/** The limited account's requests per minute. */
const L = 24;
const LANES = 4;
/** A delivery the receiver goes on holding at least this long is one the kill will interrupt (it holds 3 s). */
const HELD_ON_MS = 1_000;
const REDIS_PREFIX = 'fleet:';

function haproxyAvailable(): boolean {
  if (findHaproxy()) return true;
  const message = 'the fleet drill needs haproxy (Debian: apt-get install haproxy), not found on PATH or in /usr/sbin';
  if (process.env.CI === 'true') throw new Error(`${message} (required under CI=true)`);
  console.warn(`${message}; it is skipped`);
  return false;
}

const AVAILABLE =
  postgresClusterAvailable('the fleet drill') &&
  binariesAvailable(['redis-server'], 'the fleet drill') &&
  haproxyAvailable();

/**
 * One GET through node:http, which shows the Connection header that fetch keeps to itself, on a
 * keep-alive connection: a `Connection: close` in the answer is the server's choice.
 */
function rawGet(
  origin: string,
  path: string,
  key?: string,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: any }> {
  const agent = new Agent({ keepAlive: true });
  return new Promise<{ status: number; headers: IncomingHttpHeaders; body: any }>((resolve, reject) => {
    const req = httpRequest(
      `${origin}${path}`,
      { headers: key ? { authorization: `Bearer ${key}` } : {}, agent },
      (res) => {
        let text = '';
        res.on('data', (chunk) => {
          text += String(chunk);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode as number,
            headers: res.headers,
            body: text ? JSON.parse(text) : undefined,
          }),
        );
      },
    );
    req.once('error', reject);
    req.setTimeout(5_000, () => req.destroy(new Error('timed out')));
    req.end();
  }).finally(() => agent.destroy());
}

/**
 * A webhook receiver on loopback that answers 200 after `holdMs` (a test lengthens it to kill a
 * worker in the middle of a delivery). A delivery counts once its 200 went out to a sender still
 * there (one killed meanwhile has closed the connection): the times of each event's counted
 * deliveries, by event id.
 */
async function startReceiver() {
  const settings = { holdMs: 100 };
  const deliveries = new Map<string, number[]>();
  /** Events of the deliveries being held now (until when), and of those whose sender went away meanwhile. */
  const holding = new Map<string, number>();
  const abandoned = new Set<string>();
  const server: Server = createServer((request, response) => {
    request.resume();
    request.once('end', () => {
      const id = request.headers['webhook-id'] as string;
      // Until when: a hold begun before the hold time changed keeps its own.
      const holdMs = settings.holdMs;
      holding.set(id, Date.now() + holdMs);
      // A sender killed meanwhile closes its end of the connection: noted at once, since a reply
      // written before the reset arrives would otherwise look delivered.
      let gone = false;
      const away = () => {
        gone = true;
      };
      request.socket.once('end', away).once('close', away);
      setTimeout(() => {
        request.socket.off('end', away).off('close', away);
        holding.delete(id);
        if (gone || request.socket.destroyed) {
          abandoned.add(id);
          return;
        }
        response.writeHead(200).end('ok', () => {
          const times = deliveries.get(id) ?? [];
          times.push(Date.now());
          deliveries.set(id, times);
        });
      }, holdMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    settings,
    deliveries,
    holding,
    abandoned,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe.skipIf(!AVAILABLE)('the fleet drill: 3 API processes and 2 workers behind HAProxy', () => {
  let cluster: PostgresCluster;
  let redis: RedisProcess;
  let database: DatabaseHandle;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let lb = '';
  let apiEnv: Record<string, string> = {};
  let common: Record<string, string> = {};
  const apis: ServerProcess[] = [];
  const workers: WorkerProcess[] = [];
  let accountId = '';
  let key = '';
  let limited = { id: '', key: '' };

  /** Every POST /v1/contacts the load sent that was acknowledged. */
  const acknowledged: { id: string; phone: string }[] = [];
  /** When the first worker was killed, and the jobs it held then. */
  let killedAt = 0;
  let orphans: { id: string; locked_until: string | null }[] = [];
  let victimId = '';
  let survivor: WorkerProcess;

  const json = (stdout: string) => JSON.parse(stdout) as Record<string, any>;

  beforeAll(async () => {
    ensureBuilt();
    [cluster, redis, receiver] = await Promise.all([startPostgresCluster(), startRedis(), startReceiver()]);
    const databaseUrl = cluster.url('postgres');
    common = {
      DATABASE_URL: databaseUrl,
      NODE_ENV: 'production',
      CONVO_SECRET_KEY: randomBytes(32).toString('hex'),
      CONVO_ALLOW_PRIVATE_WEBHOOKS: 'true',
      REDIS_URL: redis.url,
      CONVO_REDIS_PREFIX: REDIS_PREFIX,
    };
    // In production only `migrate` migrates: serve and worker never do.
    await convoServer(common, 'migrate');
    const keyOf = async (account: string, type: string) =>
      json(await convoServer(common, 'keys', 'create', '--account', account, '--type', type, '--json')).key;
    const lbPort = await freePort();
    lb = `http://127.0.0.1:${lbPort}`;
    apiEnv = {
      ...common,
      CONVO_WORKER: 'false',
      CONVO_TRUSTED_PROXIES: 'loopback',
      CONVO_DRAIN_SECONDS: String(DRAIN_SECONDS),
      CONVO_PUBLIC_URL: lb,
    };
    await Promise.all([
      (async () => {
        accountId = json(
          await convoServer(
            common,
            'accounts',
            'create',
            '--name',
            'Fleet',
            '--plan',
            'enterprise',
            '--rpm',
            '1000000',
            '--json',
          ),
        ).id;
        [key] = await Promise.all([keyOf(accountId, 'full_access'), keyOf(accountId, 'webhook')]);
      })(),
      (async () => {
        const id = json(
          await convoServer(
            common,
            'accounts',
            'create',
            '--name',
            'Limited',
            '--plan',
            'enterprise',
            '--rpm',
            String(L),
            '--json',
          ),
        ).id;
        limited = { id, key: await keyOf(id, 'full_access') };
      })(),
    ]);
    // A few processes at a time: on a busy machine, all at once outlast any sensible start timeout.
    // The one to be drained runs as the bin's shebang runs it: the signal must reach node through it.
    apis.push(...(await Promise.all([1, 2, 3].map((n) => startServer(apiEnv, `api-${n}`, { viaBin: n === 1 })))));
    workers.push(...(await Promise.all([1, 2].map((n) => startWorkerProcess(common, `worker-${n}`)))));
    await startHaproxy(
      HAPROXY_CONFIG,
      {
        CONVO_LB_ADDRESS: `127.0.0.1:${lbPort}`,
        CONVO_API_1: `127.0.0.1:${apis[0]?.port}`,
        CONVO_API_2: `127.0.0.1:${apis[1]?.port}`,
        CONVO_API_3: `127.0.0.1:${apis[2]?.port}`,
      },
      `${lb}/healthz`,
    );
    database = openDatabase(databaseUrl);
    const endpoint = await send(lb, 'POST', '/v1/webhook_endpoints', {
      key,
      body: { url: receiver.url, events: ['contact.created'] },
    });
    expect(endpoint.status, describeAnswer(endpoint)).toBe(201);
  }, 90_000);

  afterAll(async () => {
    await database?.destroy();
    await stopAll();
    await receiver?.close();
  });

  it('shows in README.md the HAProxy configuration it runs, and the production command with the flags it runs node with', () => {
    const readme = readFileSync(join(API_DIR, '..', '..', 'README.md'), 'utf8');
    expect(readme).toContain(readFileSync(HAPROXY_CONFIG, 'utf8').trim());
    expect(NODE_FLAGS.length).toBeGreaterThan(0);
    expect(readme).toContain(`node ${NODE_FLAGS.join(' ')} apps/api/dist/bin.js serve`);
  });

  it('loses no client request to a SIGTERM of an API process under load, which drains and exits 0', async () => {
    const failures: Answer[] = [];
    let stop = false;
    let phones = 0;
    // Bounded loops: each writes a contact and reads it back (through another instance, likely).
    const lane = async () => {
      for (let i = 0; i < 5_000 && !stop; i++) {
        const phone = `+1415${String(2_000_000 + phones++).padStart(7, '0')}`;
        const written = await send(lb, 'POST', '/v1/contacts', { key, body: { phone } });
        if (written.status !== 201) {
          failures.push(written);
          continue;
        }
        acknowledged.push({ id: written.body.id, phone });
        const read = await send(lb, 'GET', `/v1/contacts/${written.body.id}`, { key });
        if (read.status !== 200 || read.body?.phone !== phone) failures.push(read);
      }
    };
    const lanes = Array.from({ length: LANES }, lane);
    try {
      await waitFor(() => acknowledged.length >= 100, '100 acknowledged writes', 30_000);

      // A worker holding deliveries in flight dies without a word. Whichever worker fills the endpoint's
      // lane first keeps it (each claims again as its deliveries end), so the victim is the one found
      // in the act, not a chosen one.
      const ids = workers.map((worker) => /Convo worker (\S+) running/.exec(worker.stderr())?.[1] as string);
      // Killed while the receiver holds a delivery it is making: one it cannot have recorded. The
      // receiver holds what arrives meanwhile for 3 s, which leaves time to kill it in the act.
      receiver.settings.holdMs = 3_000;
      await waitFor(
        async () => {
          const held = await database.db
            .selectFrom('jobs')
            .select(['payload', 'locked_by'])
            .where('locked_by', 'in', ids)
            .where('kind', '=', 'deliver_webhook')
            .execute();
          if (held.length === 0) return false;
          const workerOf = new Map(
            held.map((job) => [(JSON.parse(job.payload) as { deliveryId: string }).deliveryId, job.locked_by]),
          );
          const sending = await database.db
            .selectFrom('webhook_deliveries')
            .select(['id', 'event_id'])
            .where('id', 'in', [...workerOf.keys()])
            .execute();
          // A hold with time to run: the kill lands well before the receiver would answer it.
          const inTheAct = sending.find(
            (delivery) => (receiver.holding.get(delivery.event_id) ?? 0) - Date.now() > HELD_ON_MS,
          );
          if (!inTheAct) return false;
          victimId = workerOf.get(inTheAct.id) as string;
          return true;
        },
        'a worker to be making a delivery',
        15_000,
        5,
      );
      const victim = workers[ids.indexOf(victimId)] as WorkerProcess;
      survivor = workers[1 - ids.indexOf(victimId)] as WorkerProcess;
      killedAt = Date.now();
      expect(await victim.kill('SIGKILL')).toBe('SIGKILL');
      receiver.settings.holdMs = 100;
      // What it died holding: nobody else may run these until their lease runs out.
      orphans = await database.db
        .selectFrom('jobs')
        .select(['id', 'locked_until'])
        .where('locked_by', '=', victimId)
        .execute();

      const drained = apis[0] as ServerProcess;
      const signalledAt = Date.now();
      drained.child.kill('SIGTERM');
      // Out of the balancer's rotation at once, and still serving, closing each connection it answers.
      await waitFor(
        async () => (await rawGet(drained.origin, '/readyz')).status === 503,
        '/readyz to answer 503',
        2_000,
        10,
      );
      const during = await rawGet(drained.origin, '/v1/contacts?limit=1', key);
      expect(during.status).toBe(200);
      expect(during.headers.connection).toBe('close');
      expect(await drained.exited).toBe(0);
      expect(Date.now() - signalledAt).toBeGreaterThanOrEqual(DRAIN_SECONDS * 1000);
      expect(drained.stderr()).toContain(`draining for ${DRAIN_SECONDS} s`);

      // The load goes on a little after it left, then a rolling restart brings it back on its port.
      const after = acknowledged.length;
      await waitFor(() => acknowledged.length >= after + 100, '100 more acknowledged writes', 30_000);
    } finally {
      stop = true;
      await Promise.all(lanes);
    }
    expect(failures.map(describeAnswer)).toEqual([]);
    apis[0] = await startServer(apiEnv, 'api-1-again', { port: (apis[0] as ServerProcess).port, viaBin: true });
  });

  it(`delivers every event although a worker was killed holding deliveries, within the ${LEASE_MS / 1000} s lease`, async () => {
    expect(orphans.length).toBeGreaterThan(0);
    expect(receiver.abandoned.size).toBeGreaterThan(0);
    // Renewed every third of it while the worker lived: no lease outlasted it by more than one lease.
    for (const job of orphans) expect(Date.parse(job.locked_until as string)).toBeLessThanOrEqual(killedAt + LEASE_MS);
    const events = await database.db
      .selectFrom('events')
      .select(['id', 'created_at'])
      .where('type', '=', 'contact.created')
      .execute();
    expect(events.length).toBe(acknowledged.length);
    // The dead worker's jobs fill their endpoint's lane until their lease ends, so what the load made
    // meanwhile drains after it: the time for that backlog grows with how fast the API took writes.
    const deadline = killedAt + LEASE_MS + 15_000;
    await waitFor(
      async () =>
        events.every((event) => receiver.deliveries.has(event.id)) &&
        (await database.db.selectFrom('jobs').select('id').where('locked_by', '=', victimId).execute()).length === 0,
      "every event to be delivered, and the dead worker's jobs to be taken",
      Math.max(1, deadline - Date.now()),
      100,
    );
    let duplicates = 0;
    for (const event of events) duplicates += (receiver.deliveries.get(event.id) as number[]).length - 1;
    // The deliveries the dead worker was making went again once its lease ran out, within it.
    const retaken = [...receiver.abandoned].map((id) => (receiver.deliveries.get(id)?.[0] as number) - killedAt);
    for (const ms of retaken) expect(ms).toBeLessThanOrEqual(LEASE_MS + 3_000);
    // The surviving worker, given SIGTERM, stops claiming, finishes, gives back what it holds and exits 0.
    const survivorId = /Convo worker (\S+) running/.exec(survivor.stderr())?.[1] as string;
    expect(await survivor.kill('SIGTERM')).toBe(0);
    expect(await database.db.selectFrom('jobs').select('id').where('locked_by', '=', survivorId).execute()).toEqual([]);
    // At least once is the promise: a delivery a dead worker had made but not recorded goes again.
    console.info(
      `fleet drill: ${events.length} events delivered, ${duplicates} of them twice or more; the killed worker ` +
        `(worker-${workers.indexOf(survivor) === 1 ? 1 : 2}) held ${orphans.length} jobs, ` +
        `${receiver.abandoned.size} deliveries in flight, made again ${retaken.join(', ')} ms after the kill`,
    );
  });

  it('serves exactly L of 2L requests spread over the 3 instances (one count in Redis, under its prefix)', async () => {
    const get = (i: number) =>
      send((apis[i % 3] as ServerProcess).origin, 'GET', '/v1/contacts?limit=1', { key: limited.key });
    // One to each instance first, so that each is known to count, then the rest all at once.
    const answers: Answer[] = [];
    for (const i of [0, 1, 2]) answers.push(await get(i));
    answers.push(...(await Promise.all(Array.from({ length: 2 * L - 3 }, (_, i) => get(i + 3)))));
    for (const answer of answers) expect([200, 429], describeAnswer(answer)).toContain(answer.status);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(L);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(L);
    for (const answer of answers.filter((a) => a.status === 429)) expect(answer.body?.error?.code).toBe('rate_limited');
    for (const server of [0, 1, 2]) expect(answers.some((a, i) => i % 3 === server && a.status === 200)).toBe(true);

    // Another deployment on the same Redis, under another prefix, counts the same account apart.
    const admin = new Redis(redis.url);
    const elsewhere = RateLimits.create({ database, redisUrl: redis.url, redisPrefix: 'elsewhere:' });
    try {
      for (let i = 0; i < L; i++) await elsewhere.consume(limited.id, L);
      await expect(elsewhere.consume(limited.id, L)).rejects.toMatchObject({ code: 'rate_limited' });
      expect((await admin.keys(`*${limited.id}*`)).sort()).toEqual([
        `elsewhere:rpm${L}:${limited.id}`,
        `${REDIS_PREFIX}rpm${L}:${limited.id}`,
      ]);
      expect((await admin.keys('*')).filter((k) => !k.startsWith(REDIS_PREFIX) && !k.startsWith('elsewhere:'))).toEqual(
        [],
      );
    } finally {
      await elsewhere.close();
      admin.disconnect();
    }
  });

  it('refuses a revoked key on the very next request to each instance', async () => {
    const fresh = json(
      await convoServer(common, 'keys', 'create', '--account', accountId, '--type', 'read_only', '--json'),
    );
    for (const api of apis)
      expect((await send(api.origin, 'GET', '/v1/contacts?limit=1', { key: fresh.key })).status).toBe(200);
    await convoServer(common, 'keys', 'revoke', fresh.id);
    for (const api of apis) {
      const answer = await send(api.origin, 'GET', '/v1/contacts?limit=1', { key: fresh.key });
      expect(answer.status, describeAnswer(answer)).toBe(401);
      expect(answer.body?.error?.code).toBe('unauthorized');
    }
  });

  it('reads back every acknowledged write', async () => {
    const missing: string[] = [];
    for (let i = 0; i < acknowledged.length; i += 25) {
      const batch = acknowledged.slice(i, i + 25);
      const answers = await Promise.all(batch.map((contact) => send(lb, 'GET', `/v1/contacts/${contact.id}`, { key })));
      for (const [j, answer] of answers.entries())
        if (answer.status !== 200 || answer.body?.phone !== batch[j]?.phone) missing.push(describeAnswer(answer));
    }
    expect(missing).toEqual([]);
    const list = await send(lb, 'GET', '/v1/contacts?limit=1', { key });
    expect(list.body?.total).toBe(acknowledged.length);
  });

  it('migrates only by `convo-server migrate` in production: serve and worker leave a new database as they found it (and Ctrl-C skips the drain)', async () => {
    await sql`create database untouched`.execute(database.db);
    const server = await startServer({ ...apiEnv, DATABASE_URL: cluster.url('untouched') }, 'api-unmigrated');
    // Ctrl-C is someone at a terminal: stopped at once, without the drain a SIGTERM gets.
    const interruptedAt = Date.now();
    expect(await server.kill('SIGINT')).toBe(0);
    expect(Date.now() - interruptedAt).toBeLessThan(DRAIN_SECONDS * 1000);
    expect(server.stderr()).toContain('SIGINT: stopping (draining for 0 s');
    // The worker cannot run on a schema that is not there, and says so rather than make it.
    const worker = startWorkerProcess({ ...common, DATABASE_URL: cluster.url('untouched') }, 'worker-unmigrated');
    await expect(worker).rejects.toThrow(/exited \(1\)/);
    const untouched = openDatabase(cluster.url('untouched'));
    try {
      const tables = await sql<{
        table_name: string;
      }>`select table_name from information_schema.tables where table_schema = 'public'`.execute(untouched.db);
      expect(tables.rows).toEqual([]);
    } finally {
      await untouched.destroy();
    }
  });
});
