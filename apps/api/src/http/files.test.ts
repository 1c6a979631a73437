import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { File as FileRecord } from '@convo/core';
import { afterAll, describe, expect, it } from 'vitest';
import { filesService } from '../services/files.js';
import { describeEachDialect, expectBody, testSettings, type TestServer } from '../testing/harness.js';

/** POST /v1/files with `parts` as multipart/form-data (fetch writes the boundary). */
async function upload(
  server: TestServer,
  parts: [name: string, value: Blob | string, filename?: string][],
  options: { key?: string; idempotencyKey?: string } = {},
) {
  const form = new FormData();
  for (const [name, value, filename] of parts)
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, value, filename);
  const headers: Record<string, string> = { authorization: `Bearer ${options.key ?? server.keys.full}` };
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  const response = await fetch(`${server.baseUrl}/files`, { method: 'POST', headers, body: form });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: text ? JSON.parse(text) : undefined };
}

const content = (server: TestServer, id: string, headers: Record<string, string> = {}, key = server.keys.full) =>
  fetch(`${server.baseUrl}/files/${id}/content`, { headers: { authorization: `Bearer ${key}`, ...headers } });

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

function filesSuite(server: () => TestServer) {
  it('keeps an upload and gives it back: record, bytes, headers', async () => {
    const bytes = randomBytes(700_000); // more than one chunk of the database store
    const made = await upload(server(), [['file', new Blob([bytes], { type: 'application/pdf' }), 'recibo №7.pdf']]);
    const file = expectBody(made, 201, FileRecord);
    expect(file).toMatchObject({ filename: 'recibo №7.pdf', mime_type: 'application/pdf', size: bytes.length });
    expect(file.sha256).toBe(sha256(bytes));
    expect(file.id).toMatch(/^file_/);
    expect(
      expectBody(await server().request('GET', `/files/${file.id}`, { key: server().keys.readOnly }), 200, FileRecord),
    ).toEqual(file);

    const got = await content(server(), file.id, {}, server().keys.readOnly);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('application/pdf');
    expect(got.headers.get('content-length')).toBe(String(bytes.length));
    expect(got.headers.get('etag')).toBe(`"${file.sha256}"`);
    expect(got.headers.get('cache-control')).toBe('private');
    expect(got.headers.get('content-disposition')).toBe(
      `attachment; filename="recibo _7.pdf"; filename*=UTF-8''recibo%20%E2%84%967.pdf`,
    );
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);

    const again = await content(server(), file.id, { 'if-none-match': `W/"x", "${file.sha256}"` });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    const other = await content(server(), file.id, { 'if-none-match': '"other"' });
    expect(other.status).toBe(200);
    await other.arrayBuffer();
  });

  it('shows images inline, and a file without a name or type as an attachment of octet-stream', async () => {
    const image = expectBody(
      await upload(server(), [['file', new Blob([randomBytes(10)], { type: 'image/png' }), 'photo.png']]),
      201,
      FileRecord,
    );
    expect((await content(server(), image.id)).headers.get('content-disposition')).toBe(
      `inline; filename="photo.png"; filename*=UTF-8''photo.png`,
    );
    const empty = expectBody(await upload(server(), [['file', new Blob([]), '']]), 201, FileRecord);
    expect(empty).toMatchObject({ filename: null, mime_type: 'application/octet-stream', size: 0 });
    const got = await content(server(), empty.id);
    expect(got.headers.get('content-disposition')).toBe('attachment');
    expect(got.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect((await got.arrayBuffer()).byteLength).toBe(0);
  });

  it('refuses what is not one file part, keeping nothing of it', async () => {
    const before = await server().database.db.selectFrom('file_chunks').select('file_id').execute();
    const noFile = await upload(server(), [['note', 'hello']]);
    expect(noFile.status).toBe(400);
    expect(noFile.body.error.details).toMatchObject({ field: 'note', constraint: 'unknown' });
    const nothing = await upload(server(), []);
    expect(nothing.status).toBe(400);
    expect(nothing.body.error.details).toMatchObject({ field: 'file', constraint: 'required' });
    const two = await upload(server(), [
      ['file', new Blob(['a']), 'a.txt'],
      ['file', new Blob(['b']), 'b.txt'],
    ]);
    expect(two.status).toBe(400);
    expect(two.body.error.details).toMatchObject({ field: 'file', constraint: 'unknown' });
    const json = await server().request('POST', '/files', { body: { file: 'x' } });
    expect(json.status).toBe(400);
    expect(json.body.error.details).toMatchObject({ field: 'body', constraint: 'content_type' });
    const text = await server().request('POST', '/files', {
      rawBody: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(400);
    expect(text.body.error.details).toMatchObject({ field: 'body', constraint: 'content_type' });
    expect(text.body.error.message).toContain('multipart/form-data');
    const malformed = await server().request('POST', '/files', {
      rawBody: '--zz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc',
      headers: { 'content-type': 'multipart/form-data; boundary=zz' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.details).toMatchObject({ field: 'body', constraint: 'format' });
    const after = await server().database.db.selectFrom('file_chunks').select('file_id').execute();
    expect(after).toEqual(before);
  });

  it('needs a full-access key to upload, and shows no other account its files', async () => {
    const readOnly = await upload(server(), [['file', new Blob(['x']), 'x.txt']], { key: server().keys.readOnly });
    expect(readOnly.status).toBe(403);
    const file = expectBody(await upload(server(), [['file', new Blob(['mine']), 'x.txt']]), 201, FileRecord);
    const other = server().keys.otherFull;
    expect((await server().request('GET', `/files/${file.id}`, { key: other })).status).toBe(404);
    expect((await content(server(), file.id, {}, other)).status).toBe(404);
    expect((await content(server(), 'file_nope')).status).toBe(404);
  });

  it('replays an upload sent again with its Idempotency-Key, keeping one copy of the bytes', async () => {
    const key = `files-${randomBytes(6).toString('hex')}`;
    const bytes = randomBytes(1_000);
    const first = expectBody(
      await upload(server(), [['file', new Blob([bytes]), 'a.bin']], { idempotencyKey: key }),
      201,
      FileRecord,
    );
    const second = await upload(server(), [['file', new Blob([bytes]), 'a.bin']], { idempotencyKey: key });
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first);
    const other = await upload(server(), [['file', new Blob([randomBytes(10)]), 'a.bin']], { idempotencyKey: key });
    expect(other.status).toBe(400);
    expect(other.body.error.details).toMatchObject({ field: 'Idempotency-Key', constraint: 'idempotency_key' });
    const { db } = server().database;
    const unclaimed = await db
      .selectFrom('file_chunks')
      .select('file_id')
      .where('account_id', '=', server().accountId)
      .where('file_id', 'not in', db.selectFrom('files').select('id').where('account_id', '=', server().accountId))
      .execute();
    expect(unclaimed).toEqual([]);
  });

  it("deletes, in the prune job, the bytes of uploads no record claimed once a day old, in the server's stores", async () => {
    const stale = 'file_00000000000000000000000000';
    await server()
      .database.db.insertInto('file_chunks')
      .values({ account_id: server().accountId, file_id: stale, seq: 0, data: Buffer.from('x') })
      .execute();
    const dir = server().settings.filesDir;
    if (dir) {
      mkdirSync(join(dir, server().accountId), { recursive: true });
      writeFileSync(join(dir, server().accountId, stale), 'x');
    }
    const kept = expectBody(await upload(server(), [['file', new Blob(['kept']), 'k.txt']]), 201, FileRecord);
    await filesService.pruneUnclaimed(server());
    expect(
      await server().database.db.selectFrom('file_chunks').select('seq').where('file_id', '=', stale).execute(),
    ).toEqual([]);
    if (dir) expect(readdirSync(join(dir, server().accountId))).not.toContain(stale);
    // A claimed file, however old the prune, keeps its bytes.
    expect(Buffer.from(await (await content(server(), kept.id)).arrayBuffer()).toString()).toBe('kept');
  });
}

describeEachDialect('files in the database store', (server) => filesSuite(server));

describe('files in a folder (CONVO_FILES_DIR)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'convo-files-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  describeEachDialect(
    'files in the filesystem store',
    (server) => {
      filesSuite(server);
      it('writes the bytes under the folder, one folder per account, and none to the database', async () => {
        const file = expectBody(await upload(server(), [['file', new Blob(['on disk']), 'd.txt']]), 201, FileRecord);
        expect(readdirSync(join(dir, server().accountId))).toContain(file.id);
        const chunks = await server()
          .database.db.selectFrom('file_chunks')
          .select('seq')
          .where('file_id', '=', file.id)
          .execute();
        expect(chunks).toEqual([]);
      });
    },
    testSettings({ filesDir: dir }),
  );
});
