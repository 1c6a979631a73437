import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { accountsService } from '../services/accounts.js';
import { ensureBuilt } from '../testing/built-bin.js';
import {
  type Answer,
  type PostgresCluster,
  type ServerProcess,
  describeAnswer,
  postgresClusterAvailable,
  send,
  sleep,
  startPostgresCluster,
  startServer,
  stopAll,
} from './processes.js';

/**
 * Postgres restarts under a steady stream of requests. The server keeps running, answers every
 * request during the outage promptly with the contract's `server_error` body, reports 503 on
 * /readyz, and serves every request again within seconds of Postgres coming back.
 */

const HAVE_CLUSTER = postgresClusterAvailable('the Postgres restart test');
/** No request may take longer than this, outage or not. */
const MAX_ANSWER_MS = 5_000;
/** After Postgres is back, every request sent later than this succeeds. */
const RECOVERY_MS = 3_000;
const BUSY_WRITERS = 4;
/** Every contact written gets a phone number of its own. */
let phones = 0;

describe.skipIf(!HAVE_CLUSTER)('a Postgres restart under load', () => {
  let cluster: PostgresCluster | undefined;
  let server: ServerProcess | undefined;
  let key = '';
  let existingId = '';

  beforeAll(async () => {
    ensureBuilt();
    cluster = await startPostgresCluster();
    const admin = new pg.Client({ connectionString: cluster.url('postgres') });
    await admin.connect();
    await admin.query('create database convo');
    await admin.end();
    const database = openDatabase(cluster.url('convo'));
    try {
      await migrateToLatest(database.db);
      const account = await accountsService.createAccount(
        { database },
        {
          name: 'Restart',
          plan: 'enterprise',
          rateLimitRpm: 1_000_000,
        },
      );
      key = (await accountsService.createKey({ database }, { accountId: account.id, type: 'full_access' })).key;
    } finally {
      await database.destroy();
    }
    // The worker runs too (as `serve` does by default): it must survive the outage as well.
    server = await startServer({ DATABASE_URL: cluster.url('convo'), CONVO_WORKER: 'true' }, 'pg-restart');
    const created = await send(server.origin, 'POST', '/v1/contacts', { key, body: { phone: '+14155550100' } });
    expect(created.status, describeAnswer(created)).toBe(201);
    existingId = created.body.id;
  });
  afterAll(async () => {
    await stopAll();
  });

  // `fast` ends every session with an error message first; `immediate` drops them (crash recovery on start).
  it.each(['fast', 'immediate'] as const)(
    'keeps the server up, fails cleanly while Postgres is down, and recovers within seconds (pg_ctl stop -m %s, then start)',
    async (mode) => {
      const s = server as ServerProcess;
      const c = cluster as PostgresCluster;
      let exitedDuringTest: number | string | undefined;
      void s.exited.then((code) => {
        exitedDuringTest = code;
      });

      const answers: Answer[] = [];
      const pending: Promise<void>[] = [];
      let streaming = true;
      // A few requests every 100 ms: a list, a read and a write.
      const stream = (async () => {
        while (streaming) {
          const phone = `+1415${String(6_000_000 + phones++).padStart(7, '0')}`;
          for (const [method, path, body] of [
            ['GET', '/v1/contacts?limit=5', undefined],
            ['GET', `/v1/contacts/${existingId}`, undefined],
            ['POST', '/v1/contacts', { phone }],
          ] as const) {
            pending.push(
              send(s.origin, method, path, { key, body, timeoutMs: MAX_ANSWER_MS * 2 }).then(
                (a) => void answers.push(a),
              ),
            );
          }
          // The stream's pace, the load under test: not a wait for the server.
          await sleep(100);
        }
      })();

      // Besides the steady stream, a few clients write back to back, so that transactions are open
      // (connections checked out of the pool) at the moment Postgres goes away.
      const busyWriter = async () => {
        while (streaming) {
          const phone = `+1416${String(6_000_000 + phones++).padStart(7, '0')}`;
          const answer = await send(s.origin, 'POST', '/v1/contacts', {
            key,
            body: { phone },
            timeoutMs: MAX_ANSWER_MS * 2,
          });
          answers.push(answer);
          // A failed writer paces itself as a client would, rather than spinning through the outage.
          if (answer.status !== 201) await sleep(20);
        }
      };
      const writers = Array.from({ length: BUSY_WRITERS }, busyWriter);

      const succeeded = (a: Answer) => a.status === (a.method === 'POST' ? 201 : 200);
      // Postgres goes away once the server has answered under the load (the checks below want more than 5 answers
      // before).
      await vi.waitFor(() => expect(answers.filter(succeeded).length).toBeGreaterThan(10), {
        timeout: 20_000,
        interval: 20,
      });
      const downAt = Date.now();
      await c.stop(mode);
      const stoppedAt = Date.now();
      // /readyz is asked once a request sent during the outage has failed.
      await vi.waitFor(() => expect(answers.some((a) => a.sentAt >= stoppedAt && !succeeded(a))).toBe(true), {
        timeout: 20_000,
        interval: 20,
      });
      const readyWhileDown = await send(s.origin, 'GET', '/readyz', { timeoutMs: MAX_ANSWER_MS * 2 });
      // The outage itself, the subject of the test: Postgres stays down this long under the load.
      await sleep(1_500);
      await c.start();
      const upAt = Date.now();
      // The traffic goes on until 20 requests sent past the recovery time are answered (the checks want more than 10).
      await vi.waitFor(() => expect(answers.filter((a) => a.sentAt >= upAt + RECOVERY_MS).length).toBeGreaterThan(20), {
        timeout: RECOVERY_MS + 30_000,
        interval: 50,
      });
      streaming = false;
      await stream;
      await Promise.all([...pending, ...writers]);
      const readyAfter = await send(s.origin, 'GET', '/readyz');

      expect(exitedDuringTest, s.stderr()).toBeUndefined();
      expect(s.running(), s.stderr()).toBe(true);

      // /readyz tells the load balancer.
      expect(readyWhileDown.status, describeAnswer(readyWhileDown)).toBe(503);
      expect(readyWhileDown.ms).toBeLessThan(MAX_ANSWER_MS);
      expect(readyAfter.status, describeAnswer(readyAfter)).toBe(200);

      // Every request got a prompt answer: success, or the contract's server_error; never a hang or a reset.
      for (const answer of answers) {
        expect(answer.error, describeAnswer(answer)).toBeUndefined();
        expect(answer.ms, describeAnswer(answer)).toBeLessThan(MAX_ANSWER_MS);
        const ok = answer.method === 'POST' ? 201 : 200;
        if (answer.status !== ok) {
          expect(answer.status, describeAnswer(answer)).toBe(500);
          expect(answer.headers?.get('content-type'), describeAnswer(answer)).toMatch(/^application\/json/);
          expect(answer.body?.error?.code, describeAnswer(answer)).toBe('server_error');
          expect(answer.body?.error?.message, describeAnswer(answer)).toMatch(/request id/);
          expect(answer.headers?.get('x-request-id')).toBeTruthy();
        }
      }
      // Before the restart everything worked; while Postgres was down, requests did fail.
      const before = answers.filter((a) => a.sentAt + a.ms < downAt);
      expect(before.length).toBeGreaterThan(5);
      for (const answer of before) expect(succeeded(answer), describeAnswer(answer)).toBe(true);
      expect(answers.filter((a) => a.sentAt >= stoppedAt && a.sentAt < upAt).some((a) => !succeeded(a))).toBe(true);
      // Within a few seconds of Postgres being back, every request succeeds again.
      const after = answers.filter((a) => a.sentAt >= upAt + RECOVERY_MS);
      expect(after.length).toBeGreaterThan(10);
      for (const answer of after) expect(succeeded(answer), describeAnswer(answer)).toBe(true);

      // Every acknowledged write survived the restart.
      const written = answers.filter((a) => a.method === 'POST' && a.status === 201);
      for (let i = 0; i < written.length; i += 25) {
        const reads = await Promise.all(
          written.slice(i, i + 25).map((a) => send(s.origin, 'GET', `/v1/contacts/${a.body.id}`, { key })),
        );
        for (const read of reads) expect(read.status, describeAnswer(read)).toBe(200);
      }
      const lastFailure = Math.max(...answers.filter((a) => !succeeded(a)).map((a) => a.sentAt));
      console.info(
        `postgres restart (-m ${mode}): ${answers.length} requests, ${answers.filter((a) => !succeeded(a)).length} failed; ` +
          `outage ${upAt - downAt} ms; last failure sent ${lastFailure - upAt} ms after Postgres was back`,
      );
    },
  );
});
