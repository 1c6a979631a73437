import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { expect, it, vi } from 'vitest';
import { newId } from '../ids.js';
import { type TestServer, describeDialect, describeEachDialect } from '../testing/harness.js';
import { databaseFileStore } from './files.js';
import { TenantScope } from './tenant.js';

/** The database store's chunk: the rows of files already stored have it, so it may not change. */
const CHUNK = 512 * 1024;

const scopeOf = (server: TestServer) =>
  new TenantScope(server.database.db, server.accountId, server.database.capabilities);

/** `bytes` in pieces of `size` (the last one shorter), counting those taken; `fail` is thrown after the last. */
async function* piecesOf(
  bytes: Buffer,
  size: number,
  options: { taken?: { pieces: number; ended: boolean }; fail?: Error } = {},
) {
  for (let at = 0; at < bytes.length; at += size) {
    if (options.taken) options.taken.pieces++;
    yield bytes.subarray(at, at + size);
  }
  if (options.taken) options.taken.ended = true;
  if (options.fail) throw options.fail;
}

const chunkRows = (server: TestServer, fileId: string) =>
  server.database.db
    .selectFrom('file_chunks')
    .select(['seq', 'data'])
    .where('account_id', '=', server.accountId)
    .where('file_id', '=', fileId)
    .orderBy('seq')
    .execute();

async function readAll(server: TestServer, fileId: string, size: number): Promise<Buffer> {
  const pieces: Buffer[] = [];
  for await (const piece of databaseFileStore.read(scopeOf(server), fileId, size)) pieces.push(piece);
  return Buffer.concat(pieces);
}

describeEachDialect('the database file store', (server) => {
  it('keeps chunks of the size stored files have, and reads them back byte for byte, the last one short', async () => {
    const bytes = randomBytes(3 * CHUNK + 12_345);
    const id = newId('file');
    await databaseFileStore.write(scopeOf(server()), id, piecesOf(bytes, 70_001));
    const rows = await chunkRows(server(), id);
    expect(rows.map((row) => [Number(row.seq), row.data.length])).toEqual([
      [0, CHUNK],
      [1, CHUNK],
      [2, CHUNK],
      [3, 12_345],
    ]);
    expect(Buffer.concat(rows.map((row) => row.data)).equals(bytes)).toBe(true);
    expect((await readAll(server(), id, bytes.length)).equals(bytes)).toBe(true);
    // A size of exactly whole chunks reads those and stops.
    const whole = randomBytes(2 * CHUNK);
    const other = newId('file');
    await databaseFileStore.write(scopeOf(server()), other, piecesOf(whole, CHUNK));
    expect((await readAll(server(), other, whole.length)).equals(whole)).toBe(true);
  });

  it('fails with its source mid-way, and leaves nothing once removed', async () => {
    const id = newId('file');
    const broken = new Error('the client went away');
    const write = databaseFileStore.write(
      scopeOf(server()),
      id,
      piecesOf(randomBytes(2 * CHUNK + 1_000), 64 * 1024, { fail: broken }),
    );
    // The write settles only once no insert is under way (the held insert below shows it), so none lands later.
    await expect(write).rejects.toBe(broken);
    await databaseFileStore.remove(scopeOf(server()), id);
    expect(await chunkRows(server(), id)).toEqual([]);
  });

  it('fails with a chunk whose insert failed, reading no further, and leaves nothing once removed', async () => {
    const id = newId('file');
    // A row already in the way of the third chunk: its insert fails on the primary key.
    await server()
      .database.db.insertInto('file_chunks')
      .values({ account_id: server().accountId, file_id: id, seq: 2, data: Buffer.from('x') })
      .execute();
    const taken = { pieces: 0, ended: false };
    const write = databaseFileStore.write(scopeOf(server()), id, piecesOf(randomBytes(8 * CHUNK), CHUNK, { taken }));
    const error = await write.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(server().database.isUniqueViolation(error)).toBe(true);
    // The next chunk's insert waits for the one before, so the failure stops the reading.
    expect(taken.pieces).toBeLessThan(8);
    await databaseFileStore.remove(scopeOf(server()), id);
    expect(await chunkRows(server(), id)).toEqual([]);
  });
});

describeDialect('postgres', 'the database file store, an insert held up', (server) => {
  it('fails with its source only once the insert under way has settled, so that removing leaves nothing', async () => {
    const { db } = server().database;
    const id = newId('file');
    // Another transaction's row with the second chunk's key holds that insert up until it rolls back.
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let holding = () => {};
    const held = new Promise<void>((resolve) => {
      holding = resolve;
    });
    const blocker = db
      .transaction()
      .execute(async (trx) => {
        await trx
          .insertInto('file_chunks')
          .values({ account_id: server().accountId, file_id: id, seq: 1, data: Buffer.from('x') })
          .execute();
        holding();
        await released;
        throw new Error('roll back');
      })
      .catch(() => {});
    await held;
    const broken = new Error('the client went away');
    const taken = { pieces: 0, ended: false };
    const write = databaseFileStore.write(
      scopeOf(server()),
      id,
      piecesOf(randomBytes(2 * CHUNK + 1_000), CHUNK, { taken, fail: broken }),
    );
    let settled = false;
    write.then(
      () => (settled = true),
      () => (settled = true),
    );
    // The source has failed and the second chunk's insert waits on the blocker's lock: the write must wait too.
    await vi.waitFor(async () => {
      expect(taken.ended).toBe(true);
      const { rows } = await sql<{ waiting: number }>`
        select count(*)::int as waiting from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'`.execute(db);
      expect(rows[0]?.waiting).toBe(1);
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    release();
    await blocker;
    await expect(write).rejects.toBe(broken);
    await databaseFileStore.remove(scopeOf(server()), id);
    expect(await chunkRows(server(), id)).toEqual([]);
  });
});
