/**
 * The files benchmark (issue 43): how fast one `convo-server serve` takes a 10 MiB upload
 * (`POST /v1/files`, multipart) and gives it back (`GET /v1/files/:id/content`), one request at a
 * time over loopback, on the default store of each database (chunks in the database).
 *
 *   node --import tsx src/files.ts [--db sqlite|postgres] [--postgres-url URL] [--mib 10] [--runs 10] [--files-dir]
 *
 * `--files-dir` keeps the bytes in a temporary folder (CONVO_FILES_DIR) instead of the database.
 *
 * Prints MB/s (10^6 bytes a second) for uploads and downloads: the median and the slowest run.
 */
import { accountsService, migrateToLatest, openDatabase } from '@convo/api';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type IncomingMessage, request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { THROWAWAY_DATABASE_OPTIONS, startServe, stopServe, throwawayDatabase } from './throwaway-server.js';

const { values } = parseArgs({
  // `pnpm run files -- --db postgres` passes the `--` on.
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: {
    ...THROWAWAY_DATABASE_OPTIONS,
    mib: { type: 'string', default: '10' },
    runs: { type: 'string', default: '10' },
    'files-dir': { type: 'boolean', default: false },
  },
});
const PORT = 3499;
const size = Number(values.mib) * 1024 * 1024;
const runs = Number(values.runs);

/**
 * POST /v1/files as `curl -F` or the SDK from a file send it: the multipart body streamed in 64 KiB pieces as the
 * socket takes them (undici's FormData copies a Blob whole before sending a byte, which the server would be
 * measured waiting for).
 */
async function streamedUpload(bytes: Buffer, key: string): Promise<{ status: number; body: unknown }> {
  const boundary = `convo-bench-${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.pdf"\r\n` +
      'Content-Type: application/pdf\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const pieces = function* () {
    yield head;
    for (let at = 0; at < bytes.length; at += 64 * 1024) yield bytes.subarray(at, at + 64 * 1024);
    yield tail;
  };
  const request = httpRequest(`http://127.0.0.1:${PORT}/v1/files`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': head.length + bytes.length + tail.length,
    },
  });
  const answered = new Promise<IncomingMessage>((resolve, reject) => {
    request.once('response', resolve);
    request.once('error', reject);
  });
  await pipeline(Readable.from(pieces()), request);
  const response = await answered;
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return { status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const mbps = (seconds: number) => size / 1e6 / seconds;

const { url, cleanup } = await throwawayDatabase(values.db as string, values['postgres-url'] as string, 'files');
const database = openDatabase(url);
await migrateToLatest(database.db);
const account = await accountsService.createAccount(
  { database },
  { name: 'Files bench', plan: 'enterprise', rateLimitRpm: 100_000 },
);
const { key } = await accountsService.createKey({ database }, { accountId: account.id, type: 'full_access' });
await database.destroy();

const filesDir = values['files-dir'] ? mkdtempSync(join(tmpdir(), 'convo-bench-files-store-')) : undefined;
const server = await startServe(url, PORT, filesDir ? { CONVO_FILES_DIR: filesDir } : {});
try {
  const bytes = randomBytes(size);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const up: number[] = [];
  const down: number[] = [];
  for (let run = 0; run < runs; run++) {
    let started = performance.now();
    const made = await streamedUpload(bytes, key);
    up.push((performance.now() - started) / 1000);
    const file = made.body as { id: string; sha256: string };
    if (made.status !== 201 || file.sha256 !== sha256) throw new Error(`upload ${run}: ${made.status}`);
    started = performance.now();
    const got = await fetch(`http://127.0.0.1:${PORT}/v1/files/${file.id}/content`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const back = Buffer.from(await got.arrayBuffer());
    down.push((performance.now() - started) / 1000);
    if (!back.equals(bytes)) throw new Error(`download ${run}: not the same bytes`);
  }
  console.log(`files on ${values.db}, ${filesDir ? 'folder' : 'database'} store: ${runs} runs of ${values.mib} MiB`);
  console.log(
    `| upload (POST /v1/files) | median ${mbps(median(up)).toFixed(0)} MB/s, slowest ${mbps(Math.max(...up)).toFixed(0)} MB/s | ≥ 50 MB/s |`,
  );
  console.log(
    `| download (GET /v1/files/:id/content) | median ${mbps(median(down)).toFixed(0)} MB/s, slowest ${mbps(Math.max(...down)).toFixed(0)} MB/s | ≥ 50 MB/s |`,
  );
} finally {
  await stopServe(server);
  await cleanup();
  if (filesDir) rmSync(filesDir, { recursive: true, force: true });
}
