import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { File } from '@convo/core';
import { ApiError } from '../errors.js';
import { newId, now } from '../ids.js';
import {
  type FileRow,
  type FileStore,
  databaseFileStore,
  filesRepository,
  filesystemFileStore,
} from '../repositories/files.js';
import type { Settings } from '../settings.js';
import { type ServiceContext, type UnscopedContext, scopeOf } from './context.js';
import { encodeTime } from 'ulid';

/** Bytes kept by `store` under a new file id that no record names yet: what `create` makes a file of. */
export interface StoredUpload {
  id: string;
  filename: string | null;
  mime_type: string;
  size: number;
  sha256: string;
  store: FileStore['name'];
}

export const toFile = (row: FileRow): File => ({
  id: row.id,
  filename: row.filename,
  mime_type: row.mime_type,
  size: Number(row.size),
  sha256: row.sha256,
  created_at: row.created_at,
});

/** The store new files go to: a folder when CONVO_FILES_DIR names one, else the database. */
const storeFor = (settings: Settings): FileStore =>
  settings.filesDir ? filesystemFileStore(settings.filesDir) : databaseFileStore;

const storeNamed = (settings: Settings, name: FileStore['name']): FileStore => {
  if (name === 'database') return databaseFileStore;
  if (!settings.filesDir) throw new Error('A file is kept in the filesystem store, but CONVO_FILES_DIR is not set');
  return filesystemFileStore(settings.filesDir);
};

/** Passes the bytes on while counting and hashing them, and fails past `maxBytes`. */
async function* measured(bytes: AsyncIterable<Buffer>, maxBytes: number, into: { size: number; sha256: string }) {
  const hash = createHash('sha256');
  for await (const piece of bytes) {
    into.size += piece.length;
    if (into.size > maxBytes)
      throw ApiError.badRequest('file', 'max_bytes', `The file is larger than ${maxBytes} bytes`);
    hash.update(piece);
    yield piece;
  }
  into.sha256 = hash.digest('hex');
}

export const filesService = {
  /** Streams an upload's bytes into the store; a failure mid-way leaves nothing behind. */
  async store(
    ctx: ServiceContext,
    input: { filename: string | null; mimeType: string; bytes: AsyncIterable<Buffer>; maxBytes: number },
  ): Promise<StoredUpload> {
    const store = storeFor(ctx.settings);
    const id = newId('file');
    const seen = { size: 0, sha256: '' };
    try {
      await store.write(scopeOf(ctx), id, measured(input.bytes, input.maxBytes, seen));
    } catch (error) {
      await store.remove(scopeOf(ctx), id);
      throw error;
    }
    return {
      id,
      filename: input.filename,
      mime_type: input.mimeType,
      size: seen.size,
      sha256: seen.sha256,
      store: store.name,
    };
  },

  /** The bytes of an upload no file was made of (its request failed, or an idempotent replay answered instead). */
  discard: (ctx: ServiceContext, upload: StoredUpload) =>
    storeNamed(ctx.settings, upload.store).remove(scopeOf(ctx), upload.id),

  /** The file record of stored bytes (`POST /v1/files`, after `store`). */
  async create(ctx: ServiceContext, upload: StoredUpload): Promise<File> {
    const row: Omit<FileRow, 'account_id'> = { ...upload, created_at: now() };
    await filesRepository.insert(scopeOf(ctx), row);
    return toFile({ ...row, account_id: ctx.accountId });
  },

  /**
   * Deletes, in every store this server knows, the bytes of uploads that began over a day ago and that
   * no file claimed (a server that died mid-upload): the worker's prune job.
   */
  async pruneUnclaimed(ctx: UnscopedContext & Pick<ServiceContext, 'settings'>): Promise<void> {
    const beforeId = `file_${encodeTime(Date.now() - 86_400_000, 10)}`;
    await databaseFileStore.pruneUnclaimed(ctx.database.db, beforeId);
    if (ctx.settings.filesDir)
      await filesystemFileStore(ctx.settings.filesDir).pruneUnclaimed(ctx.database.db, beforeId);
  },

  async retrieve(ctx: ServiceContext, id: string): Promise<File> {
    const row = await filesRepository.findById(scopeOf(ctx), id);
    if (!row) throw ApiError.notFound('file', id);
    return toFile(row);
  },

  /** A file with a stream of its bytes, read from its store as the stream is read. */
  async content(ctx: ServiceContext, id: string): Promise<{ file: File; bytes: () => Readable }> {
    const row = await filesRepository.findById(scopeOf(ctx), id);
    if (!row) throw ApiError.notFound('file', id);
    const store = storeNamed(ctx.settings, row.store);
    const file = toFile(row);
    return { file, bytes: () => store.read(scopeOf(ctx), id, file.size) };
  },
};
