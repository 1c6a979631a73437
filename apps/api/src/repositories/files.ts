import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type Insertable, type Selectable, sql } from 'kysely';
import type { FileTable } from '../db/schema.js';
import type { Executor, TenantScope } from './tenant.js';

export type FileRow = Selectable<FileTable>;

export const filesRepository = {
  insert: (scope: TenantScope, row: Omit<Insertable<FileTable>, 'account_id'>) => scope.insert('files', row),

  findById: (scope: TenantScope, id: string) =>
    scope.selectFrom('files').selectAll().where('files.id', '=', id).executeTakeFirst(),

  /** Whether a file record names this id in this account (a stored file's bytes are claimed). */
  claimed: async (db: Executor, accountId: string, id: string) =>
    (await db
      .selectFrom('files')
      .select('files.id')
      .where('files.account_id', '=', accountId)
      .where('files.id', '=', id)
      .executeTakeFirst()) !== undefined,
};

/**
 * Where a file's bytes are kept: written a chunk at a time as they arrive, read back the same way, so
 * that no file sits whole in memory. Which store new files go to is configuration (CONVO_FILES_DIR);
 * each file's record names its store, so files stay readable when that changes.
 */
export interface FileStore {
  readonly name: FileTable['store'];
  write(scope: TenantScope, fileId: string, bytes: AsyncIterable<Buffer>): Promise<void>;
  /** The bytes of a file of `size` bytes, read as the stream is read, ending with its last byte. */
  read(scope: TenantScope, fileId: string, size: number): Readable;
  remove(scope: TenantScope, fileId: string): Promise<void>;
  /**
   * Deletes the bytes no file record claimed whose upload began before `beforeId` (a file id, a ULID:
   * its time), of every account: uploads whose server died mid-way (the worker's prune job).
   */
  pruneUnclaimed(db: Executor, beforeId: string): Promise<void>;
}

/**
 * The size of a chunk in the database store: small enough to hold a few, large enough for few rows. Reads count a
 * stored file's chunks by it, so it stays what the stored files have.
 */
const CHUNK_BYTES = 512 * 1024;

/** The default store: chunks in `file_chunks`, so every instance of a fleet serves them and a backup holds them. */
export const databaseFileStore: FileStore = {
  name: 'database',

  write: (scope, fileId, bytes) =>
    insertChunks(bytes, (seq, data) => scope.insert('file_chunks', [{ file_id: fileId, seq, data }])),

  read(scope, fileId, size) {
    // Every chunk but the last holds CHUNK_BYTES: their number is known, so no read follows the last byte.
    const count = Math.ceil(size / CHUNK_BYTES);
    async function* chunks() {
      for (let seq = 0; seq < count; seq++) yield* await readChunk(scope, fileId, seq);
    }
    return Readable.from(chunks(), { objectMode: false });
  },

  async remove(scope, fileId) {
    await scope.deleteFrom('file_chunks').where('file_chunks.file_id', '=', fileId).execute();
  },

  async pruneUnclaimed(db, beforeId) {
    await db
      .deleteFrom('file_chunks')
      .where('file_chunks.file_id', '<', beforeId)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('files')
              .select('files.id')
              .whereRef('files.account_id', '=', 'file_chunks.account_id')
              .whereRef('files.id', '=', 'file_chunks.file_id'),
          ),
        ),
      )
      .execute();
  },
};

/**
 * Inserts `bytes` as chunks of CHUNK_BYTES, one insert at a time but each running while the next chunk arrives,
 * and fills a chunk's buffer again once its insert has settled (the driver has sent it): for the upload target of
 * bench/README.md (Files) on Postgres. Settles only once no insert is under way, so a caller's cleanup comes after.
 */
async function insertChunks(
  bytes: AsyncIterable<Buffer>,
  insert: (seq: number, data: Buffer) => Promise<void>,
): Promise<void> {
  let seq = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let inserting: { done: Promise<void>; data: Buffer } | undefined;
  let spare: Buffer | undefined;
  const flush = async () => {
    let data: Buffer;
    if (spare && pendingBytes === CHUNK_BYTES) {
      data = spare;
      let at = 0;
      for (const piece of pending) at += piece.copy(data, at);
    } else data = Buffer.concat(pending, pendingBytes);
    spare = undefined;
    pending = [];
    pendingBytes = 0;
    if (inserting) {
      await inserting.done;
      spare = inserting.data;
    }
    const done = insert(seq++, data);
    // Awaited with the next chunk or at the end: a failure until then is not an unhandled rejection.
    done.catch(() => {});
    inserting = { done, data };
  };
  try {
    for await (const piece of bytes) {
      let rest = piece;
      while (pendingBytes + rest.length >= CHUNK_BYTES) {
        const taken = CHUNK_BYTES - pendingBytes;
        pending.push(rest.subarray(0, taken));
        pendingBytes += taken;
        rest = rest.subarray(taken);
        await flush();
      }
      if (rest.length > 0) {
        pending.push(rest);
        pendingBytes += rest.length;
      }
    }
    if (pendingBytes > 0) await flush();
    await inserting?.done;
  } catch (error) {
    await inserting?.done.catch(() => {});
    throw error;
  }
}

/**
 * The slices a chunk is read in where the driver gets bytes as text (bytesAsText): each slice's hex stays below
 * the size V8 allocates as a large object, so it is a young-generation string, where a whole chunk's would take
 * fresh memory at every read.
 */
const SLICE_BYTES = 48 * 1024;

/** A chunk's bytes, in slices where they come as text: for the download target of bench/README.md (Files). */
async function readChunk(scope: TenantScope, fileId: string, seq: number): Promise<Buffer[]> {
  const chunk = scope
    .selectFrom('file_chunks')
    .where('file_chunks.file_id', '=', fileId)
    .where('file_chunks.seq', '=', seq);
  const slices = scope.dialect.bytesAsText
    ? await chunk
        .crossJoin(sql`generate_series(1, length(file_chunks.data), ${SLICE_BYTES})`.as('slice_start'))
        .select(sql<Buffer>`substring(file_chunks.data from ${sql.ref('slice_start')} for ${SLICE_BYTES})`.as('data'))
        .orderBy(sql.ref('slice_start'))
        .execute()
    : await chunk.select('file_chunks.data').execute();
  if (slices.length === 0) throw new Error(`File ${fileId} lacks its chunk ${seq}`);
  return slices.map((slice) => slice.data);
}

/** A folder of the server's (CONVO_FILES_DIR): one folder per account, one file per file id. */
export function filesystemFileStore(dir: string): FileStore {
  const pathOf = (scope: TenantScope, fileId: string) => join(dir, scope.accountId, fileId);
  return {
    name: 'filesystem',
    async write(scope, fileId, bytes) {
      await mkdir(join(dir, scope.accountId), { recursive: true, mode: 0o700 });
      await pipeline(Readable.from(bytes), createWriteStream(pathOf(scope, fileId), { mode: 0o600 }));
    },
    read: (scope, fileId) => createReadStream(pathOf(scope, fileId)),
    remove: (scope, fileId) => rm(pathOf(scope, fileId), { force: true }),
    async pruneUnclaimed(db, beforeId) {
      const accounts = await readdir(dir).catch(() => [] as string[]);
      for (const accountId of accounts) {
        for (const fileId of await readdir(join(dir, accountId)).catch(() => [] as string[])) {
          if (fileId < beforeId && !(await filesRepository.claimed(db, accountId, fileId)))
            await rm(join(dir, accountId, fileId), { force: true });
        }
      }
    },
  };
}
