import * as z from 'zod';
import { Id, Timestamp } from './common.js';

/** The largest file `POST /v1/files` takes (CONTRACT: Files and media). */
export const MAX_FILE_BYTES = 100 * 1024 * 1024;

export const File = z
  .object({
    id: Id.meta({ example: 'file_01JDQ2F3G4H5J6K7M8N9P0Q1R2' }),
    filename: z
      .string()
      .nullable()
      .meta({ description: 'The name the file was uploaded with; `null` when it had none.' }),
    mime_type: z
      .string()
      .meta({ description: 'The media type it was uploaded with (`application/octet-stream` by default).' }),
    size: z.int().min(0).meta({ description: 'In bytes.' }),
    sha256: z.string().meta({ description: 'The SHA-256 of its bytes, in hex: also the `ETag` of its content.' }),
    created_at: Timestamp,
  })
  .meta({ id: 'File' });
export type File = z.infer<typeof File>;

/**
 * What `POST /v1/files` takes: `multipart/form-data` with one part, `file`. The bytes are streamed to
 * storage before the operation runs; the server hands the operation what it stored.
 */
export const CreateFileBody = z
  .strictObject({
    file: z.file().meta({ description: `The file: at most ${MAX_FILE_BYTES / 1024 / 1024} MiB.` }),
  })
  .meta({ id: 'CreateFileBody' });
export type CreateFileBody = z.input<typeof CreateFileBody>;

export const FileIdParams = z.strictObject({ id: Id });
