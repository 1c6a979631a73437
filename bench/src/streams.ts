/**
 * The event streams benchmark (issue 44): two `convo-server serve` processes on one database, A
 * taking writes and B holding the streams, so that every event crosses processes as a worker's or
 * another instance's would (Postgres: NOTIFY; SQLite: the file's data_version).
 *
 *   node --import tsx src/streams.ts [--db sqlite|postgres] [--postgres-url URL] [--idle 1000] [--events 300] [--rate 20]
 *
 * Prints B's extra memory (RSS) for `--idle` open streams that receive nothing, and the time from
 * sending `POST /v1/contacts` to A until its `contact.created` reaches a stream on B (an upper bound
 * of commit-to-client: the commit happens inside that request), p50/p99/max, with the idle streams open.
 */
import { accountsService, migrateToLatest, openDatabase } from '@convo/api';
import { readFileSync } from 'node:fs';
import { type IncomingMessage, get } from 'node:http';
import { parseArgs } from 'node:util';
import { THROWAWAY_DATABASE_OPTIONS, startServe, stopServe, throwawayDatabase } from './throwaway-server.js';

const { values } = parseArgs({
  // `pnpm run streams -- --db postgres` passes the `--` on.
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: {
    ...THROWAWAY_DATABASE_OPTIONS,
    idle: { type: 'string', default: '1000' },
    events: { type: 'string', default: '300' },
    rate: { type: 'string', default: '20' },
  },
});
const PORTS = { writer: 3511, streams: 3512 };
const idle = Number(values.idle);
const events = Number(values.events);
/** Streams an account may hold (CONTRACT: Live events): the idle ones are spread over this many accounts each. */
const PER_ACCOUNT = 5;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] as number;

/** The resident memory of a process, in MB (Linux). */
const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

/** Opens a stream on its own connection; `onData` gets each chunk of text. Resolves once it has opened. */
function openStream(key: string, onData: (text: string) => void): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    get(
      `http://127.0.0.1:${PORTS.streams}/v1/events/stream?type=contact.created`,
      { agent: false, headers: { authorization: `Bearer ${key}` } },
      (response) => {
        if (response.statusCode !== 200) return reject(new Error(`stream: ${response.statusCode}`));
        response.setEncoding('utf8');
        response.once('data', () => resolve(response));
        response.on('data', onData);
      },
    ).on('error', reject);
  });
}

const { url, cleanup } = await throwawayDatabase(values.db as string, values['postgres-url'] as string, 'streams');
const database = openDatabase(url);
await migrateToLatest(database.db);
const keys: string[] = [];
for (let i = 0; i < Math.ceil(idle / PER_ACCOUNT) + 1; i++) {
  const account = await accountsService.createAccount(
    { database },
    { name: `Streams ${i}`, plan: 'enterprise', rateLimitRpm: 100_000 },
  );
  keys.push((await accountsService.createKey({ database }, { accountId: account.id, type: 'full_access' })).key);
}
await database.destroy();
const [measuredKey, ...idleKeys] = keys as [string, ...string[]];

const servers = await Promise.all([startServe(url, PORTS.writer), startServe(url, PORTS.streams)]);
const opened: IncomingMessage[] = [];
try {
  const pid = servers[1]?.pid as number;
  // Warm: a stream opened and closed, so the feed and its listener exist before the first reading.
  (await openStream(measuredKey, () => {})).destroy();
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const before = rssMb(pid);
  for (let i = 0; i < idle; i += 50)
    opened.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(50, idle - i) }, (_, j) =>
          openStream(idleKeys[Math.floor((i + j) / PER_ACCOUNT)] as string, () => {}),
        ),
      )),
    );
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const after = rssMb(pid);

  const arrived = new Map<string, number>();
  let buffer = '';
  opened.push(
    await openStream(measuredKey, (text) => {
      buffer += text;
      for (const match of buffer.matchAll(/"data":\{"id":"(ct_\w+)"/g))
        arrived.set(match[1] as string, performance.now());
      buffer = buffer.slice(buffer.lastIndexOf('\n\n') + 1);
    }),
  );
  const latencies: number[] = [];
  const interval = 1_000 / Number(values.rate);
  for (let i = 0; i < events; i++) {
    const sent = performance.now();
    const made = await fetch(`http://127.0.0.1:${PORTS.writer}/v1/contacts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${measuredKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ phone: `+4420${String(70_000_000 + i)}` }),
    });
    const { id } = (await made.json()) as { id: string };
    for (let waited = 0; !arrived.has(id); waited++) {
      if (waited > 500) throw new Error(`${id} never arrived`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    latencies.push((arrived.get(id) as number) - sent);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, interval - (performance.now() - sent))));
  }
  latencies.sort((a, b) => a - b);
  console.log(`event streams on ${values.db}: ${idle} idle streams on ${idleKeys.length} accounts, ${events} events`);
  console.log(
    `| ${idle} idle streams: server B's extra memory | ${(after - before).toFixed(1)} MB (RSS ${before.toFixed(0)} → ${after.toFixed(0)} MB) | < 50 MB |`,
  );
  console.log(
    `| POST on A → event on B's stream | p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms, max ${(latencies.at(-1) as number).toFixed(0)} ms | p99 ≤ 1 s |`,
  );
} finally {
  for (const stream of opened) stream.destroy();
  await Promise.all(servers.map(stopServe));
  await cleanup();
}
