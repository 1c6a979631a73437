import { createHash, randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { type TestServer, describeEachDialect } from '../testing/harness.js';
import type { ServiceContext } from './context.js';
import { filesService } from './files.js';
import { keepDownload } from './media.js';

const contextOf = (server: TestServer): ServiceContext => ({
  database: server.database,
  accountId: server.accountId,
  settings: server.settings,
});

/** `bytes` in pieces as a download hands them over; `fail` is thrown after `failAfter` bytes. */
async function* download(bytes: Buffer, options: { failAfter?: number; fail?: Error } = {}) {
  for (let at = 0; at < bytes.length; at += 10_000) {
    if (options.failAfter !== undefined && at >= options.failAfter) throw options.fail;
    yield new Uint8Array(bytes.subarray(at, at + 10_000));
  }
}

/** The account's chunks in the database store: none may be left by a download that was not kept. */
const chunkCount = async (server: TestServer) =>
  (
    await server.database.db
      .selectFrom('file_chunks')
      .select(({ fn }) => fn.countAll<number>().as('count'))
      .where('account_id', '=', server.accountId)
      .executeTakeFirstOrThrow()
  ).count;

describeEachDialect('keeping a download as a file', (server) => {
  it('keeps the bytes within the limit, with their size and sha256', async () => {
    const ctx = contextOf(server());
    const bytes = randomBytes(45_000);
    const kept = await keepDownload(ctx, {
      filename: 'a.jpg',
      mimeType: 'image/jpeg',
      bytes: download(bytes),
      maxBytes: 45_000,
    });
    if (!kept.ok) throw new Error(`not kept: ${JSON.stringify(kept)}`);
    expect(kept.upload).toMatchObject({
      filename: 'a.jpg',
      mime_type: 'image/jpeg',
      size: 45_000,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
    const file = await filesService.create(ctx, kept.upload);
    const { bytes: stored } = await filesService.content(ctx, file.id);
    const pieces: Buffer[] = [];
    for await (const piece of stored()) pieces.push(piece as Buffer);
    expect(Buffer.concat(pieces).equals(bytes)).toBe(true);
  });

  it('is too large past the limit, and keeps nothing', async () => {
    const before = await chunkCount(server());
    const kept = await keepDownload(contextOf(server()), {
      filename: null,
      mimeType: 'image/jpeg',
      bytes: download(randomBytes(45_001)),
      maxBytes: 45_000,
    });
    expect(kept).toEqual({ ok: false, tooLarge: true });
    expect(await chunkCount(server())).toBe(before);
  });

  it('is a failure that may pass when the download is cut off, and keeps nothing', async () => {
    const before = await chunkCount(server());
    const kept = await keepDownload(contextOf(server()), {
      filename: null,
      mimeType: 'application/pdf',
      bytes: download(randomBytes(600_000), { failAfter: 550_000, fail: new Error('socket hang up') }),
      maxBytes: 1_000_000,
    });
    expect(kept).toMatchObject({
      ok: false,
      tooLarge: false,
      error: { kind: 'retryable', code: 'network_error', message: 'The download was cut off: socket hang up' },
    });
    expect(await chunkCount(server())).toBe(before);
  });
});
