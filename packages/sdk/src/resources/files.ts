import type { File } from '../contract.js';
import type { ByteStream, PreparedUpload, RequestOptions } from '../request-sender.js';
import { Resource } from './resource.js';

/**
 * What `files.create` uploads. `file` is a Blob or File, bytes (a Buffer or Uint8Array), a path
 * (Node only: read as it is sent), or a stream, which is sent once and never retried, since its
 * bytes cannot be read again.
 */
export interface FileUpload {
  file: Blob | Uint8Array | ArrayBuffer | string | ByteStream;
  /** The name to keep; by default the File's own name or the path's last part. */
  filename?: string;
  /** Its media type; by default the Blob's, else guessed from the name's extension, else application/octet-stream. */
  type?: string;
}

/** Media types of common extensions, for uploads that do not say theirs. */
const MEDIA_TYPES: Record<string, string> = {
  pdf: 'application/pdf',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  mp4: 'video/mp4',
  '3gp': 'video/3gpp',
  mov: 'video/quicktime',
  webm: 'video/webm',
  mp3: 'audio/mpeg',
  m4a: 'audio/mp4',
  ogg: 'audio/ogg',
  aac: 'audio/aac',
  amr: 'audio/amr',
  wav: 'audio/wav',
  txt: 'text/plain',
  csv: 'text/csv',
  json: 'application/json',
};

/** The media type a file name's extension suggests, if it is a common one. */
export const mediaTypeOf = (filename: string): string | undefined =>
  MEDIA_TYPES[filename.slice(filename.lastIndexOf('.') + 1).toLowerCase()];

const isStream = (value: unknown): value is ByteStream =>
  typeof value === 'object' &&
  value !== null &&
  ('getReader' in value || Symbol.asyncIterator in value) &&
  !(value instanceof Uint8Array);

interface NodeFs {
  openAsBlob(path: string, options?: { type?: string }): Promise<Blob>;
}

async function prepare(upload: FileUpload): Promise<PreparedUpload> {
  const { file } = upload;
  if (typeof file === 'string') {
    // Node's own module, loaded only when a path is given, so browsers never see it (the SDK has no Node types).
    const { openAsBlob } = (await import('node:fs' as string)) as NodeFs;
    const filename = upload.filename ?? file.split(/[\\/]/).pop() ?? 'file';
    const type = upload.type ?? mediaTypeOf(filename) ?? '';
    return { file: await openAsBlob(file, { type }), filename };
  }
  if (file instanceof Blob) {
    const filename = upload.filename ?? (file as { name?: string }).name ?? 'file';
    const type = upload.type ?? (file.type || mediaTypeOf(filename) || '');
    return { file: type === file.type ? file : new Blob([file], { type }), filename };
  }
  const filename = upload.filename ?? 'file';
  const type = upload.type ?? mediaTypeOf(filename) ?? 'application/octet-stream';
  if (isStream(file)) return { stream: file, filename, type };
  return { file: new Blob([file as BlobPart], { type }), filename };
}

export class Files extends Resource {
  /** Uploads a file (at most 100 MiB) as `multipart/form-data`. */
  async create(upload: FileUpload, options?: RequestOptions): Promise<File> {
    const prepared = await prepare(upload);
    const once = 'stream' in prepared ? { ...options, maxRetries: 0 } : options;
    return this.request('files.create', { body: prepared } as never, once) as Promise<File>;
  }

  retrieve(id: string, options?: RequestOptions): Promise<File> {
    return this.request('files.retrieve', { params: { id } }, options);
  }

  /** The file's bytes as a stream, read as they arrive (`for await`, or `fs.promises.writeFile(path, stream)`). */
  content(id: string, options?: RequestOptions): Promise<ReadableStream<Uint8Array>> {
    return this.request('files.content', { params: { id } }, options) as unknown as Promise<ReadableStream<Uint8Array>>;
  }
}
