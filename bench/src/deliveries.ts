/**
 * The webhook delivery benchmark (issue 21), on Postgres: how many signed deliveries a second one
 * and two `convo-server worker` processes send to a local receiver (each event to 8 endpoints), and
 * how long an event waits between its commit and its delivery to one endpoint at a steady 200 events
 * a second, with and without another account flooding the queue.
 *
 *   node --import tsx src/deliveries.ts [--postgres-url URL] [--events 1000] [--endpoints 8] [--rate 200] [--seconds 10] [--flood 3000] [--profile DIR]
 *
 * `--profile DIR` writes a V8 CPU profile of every worker process into DIR (node --cpu-prof).
 *
 * Events are orders placed through a real `convo-server serve` (worker off): an order's response
 * comes after its commit, and its `order.placed` event then fans out to every endpoint of the
 * account. The receiver answers 200 at once (the flooding account's endpoint answers 500, so
 * each of its deliveries fails and is rescheduled).
 */
import { accountsService, migrateToLatest, openDatabase } from '@convo/api';
import { type ChildProcess, spawn } from 'node:child_process';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { DEFAULT_POSTGRES_URL, REPO_DIR, postgresDatabaseUrl } from './options.js';

const args = new Map<string, string>();
// `pnpm run <script> -- --flag value` passes the `--` on.
const argv = process.argv.slice(2).filter((arg) => arg !== '--');
for (let i = 0; i < argv.length; i += 2) args.set(String(argv[i]).replace(/^--/, ''), String(argv[i + 1]));
const ADMIN_URL = args.get('postgres-url') ?? DEFAULT_POSTGRES_URL;
const EVENTS = Number(args.get('events') ?? 1000);
const ENDPOINTS = Number(args.get('endpoints') ?? 8);
const RATE = Number(args.get('rate') ?? 200);
const SECONDS = Number(args.get('seconds') ?? 10);
const FLOOD = Number(args.get('flood') ?? 3000);
const PROFILE_DIR = args.get('profile');
const DATABASE = 'convo_bench_deliveries';
const BIN = join(REPO_DIR, 'apps/api/dist/bin.js');
const SERVER_PORT = 3951;

/** Arrival time of each delivery by order id (the event's data), and how many arrived. */
const arrivals = new Map<string, number[]>();
let received = 0;

const receiver = createServer((req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    if (req.url === '/fail') {
      res.writeHead(500).end();
      return;
    }
    const at = performance.now();
    received++;
    try {
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { id?: string } };
      const id = event.data?.id;
      if (id) {
        const list = arrivals.get(id) ?? [];
        list.push(at);
        arrivals.set(id, list);
      }
    } catch {}
    res.writeHead(200).end();
  });
});

const children = new Set<ChildProcess>();
function spawnApi(command: 'serve' | 'worker', url: string): ChildProcess {
  const profile = PROFILE_DIR && command === 'worker' ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  const child = spawn(process.execPath, [...profile, BIN, command], {
    cwd: REPO_DIR,
    env: {
      ...process.env,
      DATABASE_URL: url,
      NODE_ENV: 'production',
      // Nobody balances load here: stop at once rather than drain.
      CONVO_DRAIN_SECONDS: '0',
      CONVO_SECRET_KEY: '0'.repeat(64),
      LOG_LEVEL: 'silent',
      CONVO_WORKER: 'false',
      CONVO_ALLOW_PRIVATE_WEBHOOKS: 'true',
      PORT: String(SERVER_PORT),
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(chunk));
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/**
 * Workers up: each has said it runs. Both phases are timed from then: before, the first second of
 * each phase measured how fast Node starts a process, not how fast deliveries go.
 */
async function startWorkers(url: string, count: number): Promise<ChildProcess[]> {
  const workers = Array.from({ length: count }, () => spawnApi('worker', url));
  await Promise.all(
    workers.map(
      (worker) =>
        new Promise<void>((resolve, reject) => {
          let said = '';
          const listen = (chunk: Buffer) => {
            said += chunk.toString();
            if (!/Convo worker .* running/.test(said)) return;
            worker.stderr?.off('data', listen);
            resolve();
          };
          worker.stderr?.on('data', listen);
          worker.once('exit', (code) => reject(new Error(`a worker exited (${code}) before it ran`)));
        }),
    ),
  );
  return workers;
}

const stop = async (child: ChildProcess) => {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
};

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(20);
  }
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};

async function main(): Promise<void> {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`drop database if exists ${DATABASE} with (force)`);
  await admin.query(`create database ${DATABASE}`);
  await admin.end();
  const url = postgresDatabaseUrl(ADMIN_URL, DATABASE);
  const database = openDatabase(url);
  await migrateToLatest(database.db);

  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  const accountWith = async (name: string, endpoints: number, path: string) => {
    const account = await accountsService.createAccount(
      { database },
      {
        name,
        plan: 'enterprise',
        rateLimitRpm: 1_000_000_000,
      },
    );
    await accountsService.createKey({ database }, { accountId: account.id, type: 'webhook' });
    const { key } = await accountsService.createKey({ database }, { accountId: account.id, type: 'full_access' });
    const call = async (method: string, route: string, body: unknown) => {
      const res = await fetch(`http://127.0.0.1:${SERVER_PORT}/v1${route}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { id: string };
    };
    for (let i = 0; i < endpoints; i++)
      await call('POST', '/webhook_endpoints', { url: `${hook}${path}`, events: ['order.placed'] });
    const contact = await call('POST', '/contacts', {
      phone: `+1555${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`,
    });
    const order = () =>
      call('POST', '/orders', {
        contact_id: contact.id,
        currency: 'USD',
        items: [{ name: 'Mug', quantity: 1, unit_amount: 900 }],
      });
    return { order };
  };

  const server = spawnApi('serve', url);
  await waitUntil(
    async () => (await fetch(`http://127.0.0.1:${SERVER_PORT}/healthz`).catch(() => undefined))?.ok === true,
    30_000,
    'the server',
  );
  const steady = await accountWith('Steady', ENDPOINTS, '/ok');
  const flooding = await accountWith('Flooding', 1, '/fail');
  const timed = await accountWith('Timed', 1, '/ok');

  const report: string[] = [];

  // Throughput: the queue filled first, then drained by one worker, then by two.
  for (const workers of [1, 2]) {
    received = 0;
    const batch = Array.from({ length: EVENTS }, () => steady.order);
    for (let i = 0; i < batch.length; i += 32) await Promise.all(batch.slice(i, i + 32).map((order) => order()));
    const expected = EVENTS * ENDPOINTS;
    const running = await startWorkers(url, workers);
    const started = performance.now();
    const before = received;
    await waitUntil(() => received >= expected, 600_000, `${expected} deliveries`);
    const seconds = (performance.now() - started) / 1000;
    await Promise.all(running.map(stop));
    report.push(
      `| deliveries a second, ${workers} worker${workers > 1 ? 's' : ''} | ${Math.round((expected - before) / seconds).toLocaleString('en')} (${expected - before} in ${seconds.toFixed(1)} s) | ≥ 1,000 with two |`,
    );
  }

  // Latency: events at RATE a second for SECONDS, two workers running; then again behind a flood.
  for (const flood of [0, FLOOD]) {
    if (flood > 0) {
      // Queued before the workers start, the other account's deliveries come due together; each fails.
      for (let i = 0; i < flood; i += 32)
        await Promise.all(Array.from({ length: Math.min(32, flood - i) }, () => flooding.order()));
    }
    const running = await startWorkers(url, 2);
    arrivals.clear();
    const committed = new Map<string, number>();
    const sends: Promise<void>[] = [];
    const interval = 1000 / RATE;
    const start = performance.now();
    for (let n = 0; n < RATE * SECONDS; n++) {
      const due = start + n * interval;
      const wait = due - performance.now();
      if (wait > 0) await pause(wait);
      sends.push(
        timed.order().then((order) => {
          committed.set(order.id, performance.now());
        }),
      );
    }
    await Promise.all(sends);
    const expected = committed.size;
    await waitUntil(
      () => [...arrivals.values()].reduce((sum, list) => sum + list.length, 0) >= expected,
      300_000,
      'the timed deliveries',
    );
    const latencies = [...committed].flatMap(([id, at]) => (arrivals.get(id) ?? []).map((arrived) => arrived - at));
    await Promise.all(running.map(stop));
    report.push(
      `| commit to delivery at ${RATE} events a second${flood > 0 ? `, behind ${flood} failing deliveries of another account` : ''} | p50 ${Math.round(percentile(latencies, 50))} ms, p99 ${Math.round(percentile(latencies, 99))} ms | p99 < 1,000 ms |`,
    );
  }

  await stop(server);
  await database.destroy();
  receiver.close();
  console.log(
    `\nWebhook deliveries (Postgres; throughput with ${ENDPOINTS} endpoints per event, latency with one and two workers)\n`,
  );
  console.log('| measure | result | target |\n| --- | --- | --- |');
  console.log(report.join('\n'));
}

main().catch(async (error) => {
  console.error(error);
  for (const child of children) child.kill('SIGKILL');
  process.exit(1);
});
