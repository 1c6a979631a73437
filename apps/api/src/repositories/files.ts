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

/** The size of a chunk in the database store: small enough to hold a few, large enough for few rows. */
const CHUNK_BYTES = 512 * 1024;
const READ_AHEAD = Number(process.env.READ_AHEAD || 0);
const SLICE_BYTES = Number(process.env.SLICE_BYTES || 48 * 1024);

/** The default store: chunks in `file_chunks`, so every instance of a fleet serves them and a backup holds them. */
export const databaseFileStore: FileStore = {
  name: 'database',

  async write(scope, fileId, bytes) {
    let seq = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const flush = async () => {
      const data = Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      await scope.insert('file_chunks', [{ file_id: fileId, seq: seq++, data }]);
    };
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
  },

  read(scope, fileId, size) {
    // Every chunk but the last holds CHUNK_BYTES: their number is known, so no read follows the last byte.
    const count = Math.ceil(size / CHUNK_BYTES);
    const readChunk = async (seq: number): Promise<Buffer[]> => {
      if (scope.dialect.lateralJoins) {
        const slices = await scope
          .selectFrom('file_chunks')
          .crossJoin(sql<{ start: number }>`generate_series(1, length(file_chunks.data), ${SLICE_BYTES})`.as('start'))
          .select(sql<Buffer>`substring(file_chunks.data from start for ${SLICE_BYTES})`.as('data'))
          .where('file_chunks.file_id', '=', fileId)
          .where('file_chunks.seq', '=', seq)
          .orderBy(sql`start`)
          .execute();
        if (slices.length === 0) throw new Error(`File ${fileId} lacks its chunk ${seq}`);
        return slices.map((slice) => slice.data);
      }
      const chunk = await scope
        .selectFrom('file_chunks')
        .select('file_chunks.data')
        .where('file_chunks.file_id', '=', fileId)
        .where('file_chunks.seq', '=', seq)
        .executeTakeFirst();
      if (!chunk) throw new Error(`File ${fileId} lacks its chunk ${seq}`);
      return [chunk.data];
    };
    async function* chunks() {
      const pending: Promise<Buffer[]>[] = [];
      let issued = 0;
      try {
        for (let seq = 0; seq < count; seq++) {
          while (issued < count && issued <= seq + READ_AHEAD) {
            const read = readChunk(issued++);
            read.catch(() => {});
            pending.push(read);
          }
          for (const piece of await (pending.shift() as Promise<Buffer[]>)) yield piece;
        }
      } finally {
        await Promise.allSettled(pending);
      }
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
