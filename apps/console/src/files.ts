import type { File as FileRecord } from '@convo/core';

/** The message type a file goes out as: by its media type, a document when it is no picture, film or sound. */
export function messageTypeOf(mimeType: string): 'image' | 'video' | 'audio' | 'document' {
  const kind = mimeType.split('/')[0];
  return kind === 'image' || kind === 'video' || kind === 'audio' ? kind : 'document';
}

/**
 * Uploads a file for the session's account (`POST /console/files`, streamed to the file store):
 * tRPC carries JSON, so the bytes go beside it, with the same cookie and CSRF header.
 */
export async function uploadFile(file: File): Promise<FileRecord> {
  const form = new FormData();
  form.append('file', file, file.name);
  const response = await fetch('/console/files', {
    method: 'POST',
    headers: { 'x-convo-csrf': '1' },
    credentials: 'same-origin',
    body: form,
  });
  const body = (await response.json().catch(() => undefined)) as
    | FileRecord
    | { error?: { message?: string } }
    | undefined;
  if (!response.ok || !body || !('id' in body))
    throw new Error((body as { error?: { message?: string } } | undefined)?.error?.message ?? 'The upload failed');
  return body;
}
