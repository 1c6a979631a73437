import type { File } from '../contract.js';
import type { RequestOptions } from '../request-sender.js';
import { Resource } from './resource.js';

/** What `files.create` uploads: the bytes as a Blob (`fs.openAsBlob(path)` in Node, a `File` in a browser). */
export interface FileUpload {
  file: Blob;
  /** The name to keep; by default the File's own name. */
  filename?: string;
}

export class Files extends Resource {
  /** Uploads a file (at most 100 MiB) as `multipart/form-data`; its type is the Blob's, else `application/octet-stream`. */
  create(upload: FileUpload, options?: RequestOptions): Promise<File> {
    return this.request('files.create', { body: upload } as never, options) as Promise<File>;
  }

  retrieve(id: string, options?: RequestOptions): Promise<File> {
    return this.request('files.retrieve', { params: { id } }, options);
  }

  /** The file's bytes as a stream, read as they arrive (`for await`, or `fs.promises.writeFile(path, stream)`). */
  content(id: string, options?: RequestOptions): Promise<ReadableStream<Uint8Array>> {
    return this.request('files.content', { params: { id } }, options) as unknown as Promise<ReadableStream<Uint8Array>>;
  }
}
