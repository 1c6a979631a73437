/**
 * The channels benchmark (issue 23), on Postgres: signed WhatsApp webhook POSTs accepted a second
 * by a real `convo-server serve` (worker off), how fast one and two `convo-server worker`
 * processes drain a backlog of stored payloads into messages, and the time from a webhook's 200
 * to the signed `message.received` delivery at a local receiver at a steady inbound rate.
 *
 *   node --import tsx src/channels.ts [--postgres-url URL] [--backlog 50000] [--connections 32] [--rate 200] [--seconds 10] [--customers 300] [--drain-seconds 300] [--profile DIR] [--media-every N]
 *
 * `--media-every N` makes every Nth message a 100 KiB photo that the workers download, from a fake Graph API
 * this process starts, beside the texts.
 *
 * A backlog not drained within `--drain-seconds` is cut short: the rate is what the workers did
 * in that time, and what is left is deleted before the next phase.
 *
 * `--profile DIR` writes a V8 CPU profile of the server and of every worker process into DIR (node --cpu-prof).
 *
 * Every POST is one customer's text message with a fresh `wamid`, from one of `--customers`
 * WhatsApp ids, signed with the channel's app secret as Meta signs it. The account has one webhook
 * endpoint subscribed to `message.received`, at a receiver in this process that answers 200 at once.
 *
 * Run as `channels.ts load CONFIG` it is the load generator instead (autocannon in its own
 * process, as src/load.ts, but signing each body: load.ts only sends fixed headers).
 */
import { accountsService, migrateToLatest, openDatabase } from '@convo/api';
import { type FakeGraphApi, startFakeGraphApi } from '@convo/api/testing';
import autocannon from 'autocannon';
import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { BENCH_DIR, DEFAULT_POSTGRES_URL, REPO_DIR, postgresDatabaseUrl } from './options.js';

// ---------------------------------------------------------------------------------------------
// WhatsApp payloads (Cloud API webhook format: entry[].changes[].value with messages and contacts)

interface Payloads {
  /** The channel's external id: the WhatsApp phone number id. */
  phoneNumberId: string;
  appSecret: string;
  customers: number;
  /** Makes this batch's wamids distinct from every other batch's. */
  tag: string;
  /** Every `mediaEvery`th message is a photo (its media id the wamid's), 0 for none. */
  mediaEvery: number;
}

/** The wa_id of customer `i`: a phone number's digits. */
const customerWaId = (i: number) => `1555${String(1_000_000 + i).padStart(7, '0')}`;

/** `wamid.` and base64, as Meta's ids look; unique by batch and number. */
const wamidOf = (tag: string, n: number) => `wamid.${Buffer.from(`convo-bench:${tag}:${n}`).toString('base64')}`;

/** The media id of message `n`'s photo, when it has one: served by the fake Graph API. */
export const mediaIdOf = (tag: string, n: number) => `${tag}${n}`.replace(/\D/g, '') + String(n).padStart(8, '0');

/** The body of message `n` of a batch and its `X-Hub-Signature-256`. */
function whatsappText(payloads: Payloads, n: number): { body: string; signature: string; wamid: string } {
  const customer = n % payloads.customers;
  const waId = customerWaId(customer);
  const wamid = wamidOf(payloads.tag, n);
  const photo = payloads.mediaEvery > 0 && n % payloads.mediaEvery === 0;
  const content = photo
    ? { type: 'image', image: { id: mediaIdOf(payloads.tag, n), mime_type: 'image/jpeg', caption: `Photo ${n}` } }
    : { type: 'text', text: { body: `Hello, this is message ${n}` } };
  const body = JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '102290129340398',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '15550783881', phone_number_id: payloads.phoneNumberId },
              contacts: [{ profile: { name: `Customer ${customer}` }, wa_id: waId }],
              messages: [
                {
                  from: waId,
                  id: wamid,
                  timestamp: String(Math.floor(Date.now() / 1000)),
                  ...content,
                },
              ],
            },
          },
        ],
      },
    ],
  });
  return { body, signature: `sha256=${createHmac('sha256', payloads.appSecret).update(body).digest('hex')}`, wamid };
}

// ---------------------------------------------------------------------------------------------
// The load generator (`channels.ts load CONFIG`)

interface LoadConfig extends Payloads {
  url: string;
  path: string;
  connections: number;
  /** Requests in all, each a distinct message. */
  amount: number;
}

function load(configPath: string): void {
  const config = JSON.parse(readFileSync(configPath, 'utf8')) as LoadConfig;
  // Built and signed before the clock starts, so the run measures the server rather than this.
  const requests = Array.from({ length: config.amount }, (_, n) => whatsappText(config, n));
  let next = 0;
  const instance = autocannon(
    {
      url: config.url,
      method: 'POST',
      connections: config.connections,
      amount: config.amount,
      timeout: 30,
      requests: [
        {
          method: 'POST',
          path: config.path,
          setupRequest: (request) => {
            const { body, signature } = requests[next++ % requests.length] as { body: string; signature: string };
            return {
              ...request,
              body,
              headers: { ...request.headers, 'content-type': 'application/json', 'x-hub-signature-256': signature },
            };
          },
        },
      ],
    },
    (error, result) => {
      if (error) {
        process.stderr.write(`load: ${String(error)}\n`);
        process.exit(1);
      }
      process.stdout.write(`${JSON.stringify(result)}\n`);
    },
  );
  // The harness measures CPU time from this line on.
  process.stdout.write('start\n');
  process.once('SIGTERM', () => instance.stop());
}

// ---------------------------------------------------------------------------------------------
// The harness

const args = new Map<string, string>();
// `pnpm run <script> -- --flag value` passes the `--` on.
const argv = process.argv.slice(2).filter((arg) => arg !== '--');
for (let i = 0; i < argv.length; i += 2) args.set(String(argv[i]).replace(/^--/, ''), String(argv[i + 1]));
const ADMIN_URL = args.get('postgres-url') ?? DEFAULT_POSTGRES_URL;
const BACKLOG = Number(args.get('backlog') ?? 50_000);
const CONNECTIONS = Number(args.get('connections') ?? 32);
const RATE = Number(args.get('rate') ?? 200);
const SECONDS = Number(args.get('seconds') ?? 10);
const CUSTOMERS = Number(args.get('customers') ?? 300);
/** How long a backlog may take to drain (and its deliveries as long again) before the phase is cut short. */
const DRAIN_SECONDS = Number(args.get('drain-seconds') ?? 300);
const PROFILE_DIR = args.get('profile');
/** Every Nth message a photo the workers download beside the texts (from a fake Graph API here); 0 for none. */
const MEDIA_EVERY = Number(args.get('media-every') ?? 0);
const MEDIA_BYTES = 100 * 1024;
const photo = randomBytes(MEDIA_BYTES);
/** Meta's media for the photos, when there are any. */
let graph: FakeGraphApi | undefined;
const DATABASE = 'convo_bench_channels';
const BIN = join(REPO_DIR, 'apps/api/dist/bin.js');
const SELF = fileURLToPath(import.meta.url);
const SERVER_PORT = 3961;
const PHONE_NUMBER_ID = '106540352242922';
const CLOCK_TICKS = 100;

/** Arrival time of each `message.received` delivery by the message's wamid, and how many arrived. */
const arrivals = new Map<string, number>();
let received = 0;
let lastArrival = 0;

const receiver = createServer((req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const at = performance.now();
    received++;
    lastArrival = at;
    try {
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        data?: { platform_message_id?: string | null };
      };
      const wamid = event.data?.platform_message_id;
      if (wamid && !arrivals.has(wamid)) arrivals.set(wamid, at);
    } catch {}
    res.writeHead(200).end();
  });
});

const children = new Set<ChildProcess>();
let stderrLines = 0;
function spawnApi(command: 'serve' | 'worker', url: string): ChildProcess {
  const profile = PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  // The flags of the `convo-server` command (apps/api/bin/convo-server.js): what a deployment runs.
  const flags = ['--max-semi-space-size=8', '--heap-growing-percent=50', '--no-allocation-site-pretenuring'];
  const child = spawn(process.execPath, [...flags, ...profile, BIN, command], {
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
      ...(graph ? { CONVO_GRAPH_API_URL: graph.url } : {}),
      PORT: String(SERVER_PORT),
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // What a process says on stderr is passed on, marked; lines beyond its start and stop are counted in the report.
  child.stderr?.on('data', (chunk: Buffer) => {
    const lines = chunk
      .toString()
      .split('\n')
      .filter((line) => line.trim() !== '');
    stderrLines += lines.filter((line) => !/^Convo (API|worker) |SIGTERM: stopping/.test(line)).length;
    for (const line of lines) process.stderr.write(`[${command} ${child.pid}] ${line}\n`);
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

const stop = async (child: ChildProcess) => {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
};

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message: string) => process.stderr.write(`[channels] ${message}\n`);

async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  every = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(every);
  }
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};
const thousands = (value: number) => Math.round(value).toLocaleString('en');

/** utime + stime of a process, in clock ticks (as src/run.ts). */
const processTicks = (pid: number | undefined): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
};

/** CPU ticks of every Postgres server process by pid: what Postgres spends over a phase. */
const postgresTicks = (): Map<number, number> => {
  const ticks = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').startsWith('postgres: '))
        ticks.set(Number(entry), processTicks(Number(entry)));
    } catch {
      // The process has gone.
    }
  }
  return ticks;
};

/**
 * CPU spent by the API processes given and by Postgres from now until `done()`, in milliseconds
 * per item: where a phase's time goes on a machine whose cores they all share.
 */
function cpuMeter(processes: ChildProcess[]) {
  const apiBefore = processes.map((child) => processTicks(child.pid));
  const postgresBefore = postgresTicks();
  return (items: number): { api: number; postgres: number } => {
    const api = processes.reduce((sum, child, i) => sum + processTicks(child.pid) - (apiBefore[i] ?? 0), 0);
    let postgres = 0;
    for (const [pid, ticks] of postgresTicks()) postgres += Math.max(0, ticks - (postgresBefore.get(pid) ?? 0));
    const perItem = (ticks: number) => ((ticks / CLOCK_TICKS) * 1000) / Math.max(1, items);
    return { api: perItem(api), postgres: perItem(postgres) };
  };
}

interface AutocannonJson {
  requests: { total: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
}

/** One batch of `amount` signed POSTs at `connections`, from the load generator's process. */
async function post(
  config: LoadConfig,
  tmp: string,
): Promise<{ perSecond: number; result: AutocannonJson; seconds: number }> {
  const configPath = join(tmp, `load-${config.tag}.json`);
  writeFileSync(configPath, JSON.stringify(config));
  let started = 0;
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SELF, 'load', configPath], {
      cwd: BENCH_DIR,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (started === 0 && stdout.includes('start\n')) started = performance.now();
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (code) => {
      children.delete(child);
      if (code === 0) resolve(stdout);
      else reject(new Error(`the load generator exited with ${code}: ${stderr}`));
    });
  });
  const result = JSON.parse(output.trim().split('\n').pop() as string) as AutocannonJson;
  // From autocannon's start to its last answer: its own per-second average counts a last partial second as a whole one.
  const seconds = (performance.now() - started) / 1000;
  return { perSecond: result['2xx'] / seconds, result, seconds };
}

async function main(): Promise<void> {
  if (MEDIA_EVERY > 0) graph = await startFakeGraphApi();
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`drop database if exists ${DATABASE} with (force)`);
  await admin.query(`create database ${DATABASE}`);
  await admin.end();
  const url = postgresDatabaseUrl(ADMIN_URL, DATABASE);
  const database = openDatabase(url);
  await migrateToLatest(database.db);
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  const count = async (query: string, values: unknown[] = []) =>
    Number((await sql.query<{ n: string }>(query, values)).rows[0]?.n ?? 0);
  const commits = () => count('select xact_commit as n from pg_stat_database where datname = $1', [DATABASE]);
  const tmp = mkdtempSync(join(tmpdir(), 'convo-bench-channels-'));

  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const account = await accountsService.createAccount(
    { database },
    {
      name: 'Channels',
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

  const server = spawnApi('serve', url);
  await waitUntil(
    async () => (await fetch(`http://127.0.0.1:${SERVER_PORT}/healthz`).catch(() => undefined))?.ok === true,
    30_000,
    'the server',
  );
  const appSecret = randomBytes(16).toString('hex');
  const channel = await call('POST', '/channels', {
    platform: 'whatsapp',
    external_id: PHONE_NUMBER_ID,
    access_token: 'bench-access-token',
    app_secret: appSecret,
  });
  await call('POST', '/webhook_endpoints', { url: hook, events: ['message.received'] });
  const path = `/hooks/meta/${channel.id}`;
  const batch = (tag: string): Payloads => {
    // Each photo's media id known to the fake Graph API before its webhook is posted (one buffer for all).
    if (graph)
      for (let n = 0; n < Math.max(BACKLOG, RATE * SECONDS, CUSTOMERS); n += MEDIA_EVERY)
        graph.addMedia({ id: mediaIdOf(tag, n), bytes: photo, mimeType: 'image/jpeg' });
    return { phoneNumberId: PHONE_NUMBER_ID, appSecret, customers: CUSTOMERS, tag, mediaEvery: MEDIA_EVERY };
  };

  // What a phase cut short left (payloads, their jobs, deliveries' jobs) goes, so that the next phase starts from an
  // empty queue.
  const clearQueue = async () => {
    await sql.query("delete from jobs where kind in ('process_channel_payload', 'deliver_webhook')");
    await sql.query('delete from channel_payloads where processed_at is null');
  };
  const report: string[] = [];
  // The one-minute load average after each phase: other work on the machine shows there.
  const loads: string[] = [];
  const row = (measure: string, result: string, target: string) => {
    report.push(`| ${measure} | ${result} | ${target} |`);
    loads.push((loadavg()[0] as number).toFixed(1));
  };

  /** One POST of message `n` of a batch; the time of its answer when it is a 200. */
  const postOne = async (payloads: Payloads, n: number) => {
    const { body, signature, wamid } = whatsappText(payloads, n);
    const res = await fetch(`http://127.0.0.1:${SERVER_PORT}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
      body,
    });
    const at = performance.now();
    await res.text();
    return { wamid, at: res.status === 200 ? at : undefined };
  };

  // End to end: messages at RATE a second for SECONDS with one worker, then two, each a POST of
  // its own, timed from its 200 to the delivery of its `message.received`. First every customer
  // writes once, so that the timed messages find their contacts and conversations.
  for (const workers of [1, 2]) {
    const running = Array.from({ length: workers }, () => spawnApi('worker', url));
    if (workers === 1) {
      log(`a first message from each of ${CUSTOMERS} customers`);
      const first: string[] = [];
      for (let n = 0; n < CUSTOMERS; n += CONNECTIONS) {
        const answers = await Promise.all(
          Array.from({ length: Math.min(CONNECTIONS, CUSTOMERS - n) }, (_, i) => postOne(batch('first'), n + i)),
        );
        first.push(...answers.map((answer) => answer.wamid));
      }
      await waitUntil(
        () => first.every((wamid) => arrivals.has(wamid)),
        DRAIN_SECONDS * 1000,
        "the first messages' deliveries",
        50,
      );
    }
    // The workers are up (their first claims done) before the clock starts.
    await pause(2000);
    log(`posting ${RATE} messages a second for ${SECONDS} s with ${workers} worker${workers > 1 ? 's' : ''}`);
    arrivals.clear();
    const payloads = batch(`timed${workers}`);
    const answered = new Map<string, number>();
    const sends: Promise<void>[] = [];
    const interval = 1000 / RATE;
    let refused = 0;
    const start = performance.now();
    for (let n = 0; n < RATE * SECONDS; n++) {
      const due = start + n * interval;
      const wait = due - performance.now();
      if (wait > 0) await pause(wait);
      sends.push(
        postOne(payloads, n).then(({ wamid, at }) => {
          if (at === undefined) refused++;
          else answered.set(wamid, at);
        }),
      );
    }
    await Promise.all(sends);
    const sending = (performance.now() - start) / 1000;
    const waited = performance.now();
    while (
      [...answered.keys()].some((wamid) => !arrivals.has(wamid)) &&
      performance.now() - waited < DRAIN_SECONDS * 1000
    )
      await pause(50);
    // A message not delivered in time counts as slower than any delivered one.
    const latencies = [...answered].map(([wamid, at]) => (arrivals.get(wamid) ?? Number.POSITIVE_INFINITY) - at);
    const missing = latencies.filter((latency) => latency === Number.POSITIVE_INFINITY).length;
    await Promise.all(running.map(stop));
    if (missing > 0) await clearQueue();
    const ms = (value: number) =>
      value === Number.POSITIVE_INFINITY ? `> ${thousands(sending * 1000 + DRAIN_SECONDS * 1000)}` : thousands(value);
    row(
      `webhook's 200 to its \`message.received\` delivery at ${RATE} messages a second, ${workers} worker${workers > 1 ? 's' : ''}`,
      `p50 ${ms(percentile(latencies, 50))} ms, p99 ${ms(percentile(latencies, 99))} ms, max ${ms(Math.max(...latencies))} ms (${latencies.length} messages sent in ${sending.toFixed(1)} s${refused ? `, ${refused} refused` : ''}${missing ? `; ${missing} not delivered within ${DRAIN_SECONDS} s after the last, then deleted` : ''})`,
      'p99 < 1,000 ms',
    );
  }

  // Ingress and backlog: a batch posted with no worker running (each payload stored with its job
  // before its 200), then drained by one worker; again, drained by two.
  for (const workers of BACKLOG > 0 ? [1, 2] : []) {
    const tag = `backlog${workers}`;
    log(`posting ${BACKLOG} webhooks at c=${CONNECTIONS}`);
    const rowsBefore = await count('select count(*) as n from channel_payloads');
    const jobsBefore = await count("select count(*) as n from jobs where kind = 'process_channel_payload'");
    const ingressCpu = cpuMeter([server]);
    const ingress = await post(
      { ...batch(tag), url: `http://127.0.0.1:${SERVER_PORT}`, path, connections: CONNECTIONS, amount: BACKLOG },
      tmp,
    );
    const accepted = ingress.result['2xx'];
    const ingressCost = ingressCpu(accepted);
    const rows = (await count('select count(*) as n from channel_payloads')) - rowsBefore;
    const jobs = (await count("select count(*) as n from jobs where kind = 'process_channel_payload'")) - jobsBefore;
    const failures = ingress.result.non2xx + ingress.result.errors + ingress.result.timeouts;
    row(
      `webhook POSTs accepted a second, c=${CONNECTIONS}${rowsBefore > 0 ? `, ${rowsBefore} processed payloads in the table` : ''}`,
      `${thousands(ingress.perSecond)} (${accepted} in ${ingress.seconds.toFixed(1)} s, p50 ${ingress.result.latency.p50} ms, p99 ${ingress.result.latency.p99} ms${failures ? `, ${failures} failed` : ''}; ${rows === accepted && jobs === accepted ? 'every one stored with its job' : `${rows} payloads and ${jobs} jobs stored for ${accepted} answered 200`}; CPU per POST: server ${ingressCost.api.toFixed(2)} ms, Postgres ${ingressCost.postgres.toFixed(2)} ms)`,
      workers === 1 ? '≥ 1,500 a second' : '',
    );

    log(`draining ${BACKLOG} payloads with ${workers} worker${workers > 1 ? 's' : ''}`);
    const receivedBefore = received;
    const messagesBefore = await count("select count(*) as n from messages where direction = 'inbound'");
    const commitsBefore = await commits();
    const since = new Date().toISOString();
    const started = performance.now();
    const deadline = started + DRAIN_SECONDS * 1000;
    const running = Array.from({ length: workers }, () => spawnApi('worker', url));
    const drainCpu = cpuMeter(running);
    // Polled once a second (each poll reads the whole table); the time is the last payload's processed_at.
    let left = BACKLOG;
    let logged = started;
    while (left > 0 && performance.now() < deadline) {
      await pause(1000);
      left = await count('select count(*) as n from channel_payloads where processed_at is null');
      if (performance.now() - logged > 30_000) {
        logged = performance.now();
        log(`${BACKLOG - left} processed after ${((logged - started) / 1000).toFixed(0)} s`);
      }
    }
    const last = (
      await sql.query<{ at: string | null }>(
        'select max(processed_at) as at from channel_payloads where processed_at >= $1',
        [since],
      )
    ).rows[0]?.at;
    const drained = last ? (Date.parse(last) - Date.parse(since)) / 1000 : DRAIN_SECONDS;
    const processed = await count('select count(*) as n from channel_payloads where processed_at >= $1', [since]);
    const withErrors = await count(
      'select count(*) as n from channel_payloads where processed_at >= $1 and errors is not null',
      [since],
    );
    const messages = (await count("select count(*) as n from messages where direction = 'inbound'")) - messagesBefore;
    // The deliveries of the messages' events go on after the last payload: the receiver counts them.
    while (left === 0 && received - receivedBefore < messages && performance.now() < deadline + DRAIN_SECONDS * 1000)
      await pause(100);
    const deliveries = received - receivedBefore;
    const cost = drainCpu(messages);
    await Promise.all(running.map(stop));
    // A backend reports its commits to the statistics when it exits, a moment after its client.
    await pause(1000);
    const committed = (await commits()) - commitsBefore;
    if (left > 0) await clearQueue();
    const outcome =
      left > 0
        ? `${processed} of ${BACKLOG} payloads processed in ${DRAIN_SECONDS} s, the rest then deleted; ${deliveries} \`message.received\` delivered meanwhile`
        : deliveries < messages
          ? `${messages} messages in ${drained.toFixed(1)} s; ${deliveries} of their \`message.received\` delivered within ${DRAIN_SECONDS} s more`
          : `${messages} messages in ${drained.toFixed(1)} s; the last \`message.received\` delivered at ${((lastArrival - started) / 1000).toFixed(1)} s`;
    row(
      `backlog of ${thousands(BACKLOG)} payloads drained, ${workers} worker${workers > 1 ? 's' : ''}`,
      `${thousands(messages / drained)} messages a second (${outcome}${withErrors ? `; ${withErrors} payloads with errors` : ''}; for each message, its delivery included: CPU of the workers ${cost.api.toFixed(2)} ms and of Postgres ${cost.postgres.toFixed(2)} ms, ${(committed / Math.max(1, messages)).toFixed(1)} commits)`,
      '≥ 1,000 a second',
    );
  }

  if (graph) {
    const kept = await count(`select count(*) as n from messages where media like '%"status":"stored"%'`);
    const photos = await count("select count(*) as n from messages where type = 'image'");
    row(
      `photos (${thousands(MEDIA_BYTES / 1024)} KiB, every ${MEDIA_EVERY}th message) downloaded and kept beside the texts`,
      `${kept} of ${photos}`,
      'all',
    );
    await graph.close();
  }
  const contacts = await count('select count(*) as n from contacts');
  const conversations = await count('select count(*) as n from conversations');
  await stop(server);
  await sql.end();
  await database.destroy();
  receiver.close();
  rmSync(tmp, { recursive: true, force: true });
  console.log(
    `\nChannels (Postgres, ${cpus().length} cores; ${CUSTOMERS} customers, ${contacts} contacts and ${conversations} conversations at the end; ${stderrLines} other lines on the API processes' stderr; load average after each phase ${loads.join(', ')})\n`,
  );
  console.log('| measure | result | target |\n| --- | --- | --- |');
  console.log(report.join('\n'));
}

if (process.argv[2] === 'load') {
  load(process.argv[3] as string);
} else {
  main().catch(async (error) => {
    console.error(error);
    for (const child of children) child.kill('SIGKILL');
    process.exit(1);
  });
}
