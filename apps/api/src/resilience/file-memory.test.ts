import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_FILE_BYTES } from '@convo/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../testing/built-bin.js';
import { type ServerProcess, convoServer, startServer, stopAll } from './processes.js';

const PIECE = 256 * 1024;
/**
 * What the server may grow by while a largest file passes through it: under the file's size, which a
 * process holding the file whole would add at least. The rest is garbage the collector has not freed yet.
 */
const MAX_GROWTH = 90 * 1024 * 1024;

/** `size` bytes of a repeating pattern, made as they are read, with their SHA-256 once read. */
function generated(size: number) {
  const piece = Buffer.alloc(PIECE);
  for (let i = 0; i < PIECE; i++) piece[i] = (i * 31) % 251;
  const hash = createHash('sha256');
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= size) return controller.close();
      const next = piece.subarray(0, Math.min(PIECE, size - sent));
      sent += next.length;
      hash.update(next);
      controller.enqueue(new Uint8Array(next));
    },
  });
  return { stream, digest: () => hash.digest('hex') };
}

/** A multipart body around `file`, streamed: the head, the file's bytes, the tail. */
function multipart(file: ReadableStream<Uint8Array>) {
  const boundary = `convo${Date.now()}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const reader = file.getReader();
  let stage = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (stage === 0) {
        stage = 1;
        return controller.enqueue(new Uint8Array(head));
      }
      if (stage === 1) {
        const { done, value } = await reader.read();
        if (!done) return controller.enqueue(value);
        stage = 2;
        return controller.enqueue(new Uint8Array(tail));
      }
      controller.close();
    },
  });
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** A process's resident memory now, and the most it has held (VmRSS and VmHWM of /proc, in bytes). */
function memoryOf(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1]) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/**
 * A file of the largest size streams in and out of the server, run as in production on its default
 * SQLite database, whose resident memory (its peak, from /proc) never grows by the file's size.
 * One byte more is refused with `max_bytes`.
 */
describe.skipIf(process.platform !== 'linux')('files of 100 MiB through a server process', () => {
  let dir: string;
  let server: ServerProcess;
  let key = '';
  let baseUrl = '';
  beforeAll(async () => {
    ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'convo-files-'));
    const env = { DATABASE_URL: `file:${join(dir, 'convo.db')}` };
    await convoServer(env, 'migrate');
    const account = JSON.parse(
      await convoServer(env, 'accounts', 'create', '--name', 'Files', '--plan', 'business', '--json'),
    ).id;
    key = JSON.parse(
      await convoServer(env, 'keys', 'create', '--account', account, '--type', 'full_access', '--json'),
    ).key;
    server = await startServer(env, 'files');
    baseUrl = `${server.origin}/v1`;
  }, 60_000);
  afterAll(async () => {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  });

  it('upload and download without the process holding the file', { timeout: 120_000 }, async () => {
    const auth = { authorization: `Bearer ${key}` };
    const before = memoryOf(server.child.pid as number);
    const source = generated(MAX_FILE_BYTES);
    const { body, contentType } = multipart(source.stream);
    const made = await fetch(`${baseUrl}/files`, {
      method: 'POST',
      headers: { ...auth, 'content-type': contentType },
      body,
      duplex: 'half',
    } as RequestInit);
    const file = (await made.json()) as { id: string; size: number; sha256: string };
    expect(made.status, JSON.stringify(file)).toBe(201);
    expect(file.size).toBe(MAX_FILE_BYTES);
    expect(file.sha256).toBe(source.digest());

    const got = await fetch(`${baseUrl}/files/${file.id}/content`, { headers: auth });
    expect(got.headers.get('content-length')).toBe(String(MAX_FILE_BYTES));
    const hash = createHash('sha256');
    let size = 0;
    for await (const chunk of got.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.length;
      hash.update(chunk);
    }
    const growth = memoryOf(server.child.pid as number).peak - before.rss;
    expect(size).toBe(MAX_FILE_BYTES);
    expect(hash.digest('hex')).toBe(file.sha256);
    console.info(
      `100 MiB up and down: the server's resident memory peaked ${Math.round(growth / 2 ** 20)} MiB above its start`,
    );
    expect(growth).toBeLessThan(MAX_GROWTH);
  });

  it('refuses one byte more than 100 MiB with max_bytes', { timeout: 120_000 }, async () => {
    const { body, contentType } = multipart(generated(MAX_FILE_BYTES + 1).stream);
    const res = await fetch(`${baseUrl}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': contentType },
      body,
      duplex: 'half',
    } as RequestInit);
    const answer = (await res.json()) as { error: { details: unknown } };
    expect(res.status).toBe(400);
    expect(answer.error.details).toMatchObject({ field: 'file', constraint: 'max_bytes' });
  });
});
