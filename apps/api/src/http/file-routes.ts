import multipart from '@fastify/multipart';
import type { EndpointDefinition, OperationId } from '@convo/core';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { admitted } from '../edge/admission.js';
import { ApiError } from '../errors.js';
import { type CalledOperationId, runOperation } from '../operations.js';
import type { ServiceContext } from '../services/context.js';
import { type StoredUpload, filesService } from '../services/files.js';
import { querySchemaOf } from '../validation.js';

/**
 * The two kinds of route whose bodies are not JSON (CONTRACT: Files and media): an upload, whose
 * multipart part is streamed into storage before its operation runs on what was stored, and a
 * download, which streams a file's bytes. Neither holds a file whole in memory.
 */

/** The parts an upload may have at most: one is expected, a few more are read to name what was unexpected. */
const MAX_PARTS = 10;

/** Errors of reading a multipart body, in the contract's terms; any other error is passed on unchanged. */
function uploadError(error: unknown, part: string, maxBytes: number): unknown {
  if (error instanceof ApiError) return error;
  const code = (error as { code?: string } | null)?.code;
  if (code === 'FST_REQ_FILE_TOO_LARGE')
    return ApiError.badRequest(part, 'max_bytes', `The file is larger than ${maxBytes} bytes`);
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_PROTO_VIOLATION')
    return ApiError.badRequest('body', 'unknown', `Send one part, "${part}"`);
  // The rest is the parser's: a malformed body, or a client that went away mid-way.
  return ApiError.badRequest('body', 'format', 'The body is not valid multipart/form-data');
}

/** A part's bytes, with the parser's errors (a size past the limit, a malformed body) in the contract's terms. */
async function* partBytes(stream: AsyncIterable<Buffer>, part: string, maxBytes: number) {
  try {
    for await (const piece of stream) yield piece;
  } catch (error) {
    throw uploadError(error, part, maxBytes);
  }
}

/** The upload route, in a scope of its own: only it reads multipart bodies. */
const uploadRoute: FastifyPluginAsync<{ operationId: OperationId; operation: EndpointDefinition }> = async (
  scope,
  { operationId, operation },
) => {
  const { part: name, maxBytes } = operation.upload as NonNullable<EndpointDefinition['upload']>;
  await scope.register(multipart, multipartOptions(maxBytes));
  scope.route({
    method: operation.method,
    url: `/v1${operation.path}`,
    schema: { querystring: querySchemaOf(operation) },
    config: { operationId },
    handler: async (request, reply) => {
      const call = admitted(request);
      const stored = await readUpload(request, call.service, name, maxBytes);
      const response = await runOperation(operationId as CalledOperationId, {
        service: call.service,
        input: { query: request.query, body: { [name]: stored } },
        idempotencyKey: call.idempotencyKey,
      }).catch(async (error: unknown) => {
        await filesService.discard(call.service, stored);
        throw error;
      });
      // A replay answers with the first upload's file: this one's bytes are not needed.
      if (response.replayed) {
        await filesService.discard(call.service, stored);
        reply.header('Idempotent-Replayed', 'true');
      }
      return reply.code(response.status).type('application/json; charset=utf-8').send(response.body);
    },
  });
};

/**
 * Streams a multipart body's one file part, `name`, into the file store: the bytes kept, which no
 * file record names yet. Another part, a second file or none is a 400, and nothing is kept.
 * Needs @fastify/multipart registered in the route's scope.
 */
export async function readUpload(
  request: FastifyRequest,
  ctx: ServiceContext,
  name: string,
  maxBytes: number,
): Promise<StoredUpload> {
  if (!request.isMultipart())
    throw ApiError.badRequest('body', 'content_type', `Send the body as multipart/form-data with one part, "${name}"`);
  let upload: StoredUpload | undefined;
  let unexpected: string | undefined;
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file' && part.fieldname === name && !upload) {
        upload = await filesService.store(ctx, {
          filename: part.filename || null,
          mimeType: part.mimetype || 'application/octet-stream',
          bytes: partBytes(part.file, name, maxBytes),
          maxBytes,
        });
      } else {
        unexpected ??= part.fieldname || 'body';
        if (part.type === 'file') for await (const _ of partBytes(part.file, name, maxBytes));
      }
    }
  } catch (error) {
    if (upload) await filesService.discard(ctx, upload);
    throw uploadError(error, name, maxBytes);
  }
  if (unexpected !== undefined || !upload) {
    if (upload) await filesService.discard(ctx, upload);
    throw unexpected !== undefined
      ? ApiError.badRequest(unexpected, 'unknown', `Unexpected part "${unexpected}": send one part, "${name}"`)
      : ApiError.badRequest(name, 'required', `Send the file as the part "${name}"`);
  }
  return upload;
}

/** Options of @fastify/multipart for an upload of one part of at most `maxBytes`. */
export const multipartOptions = (maxBytes: number) => ({
  limits: { fileSize: maxBytes, parts: MAX_PARTS },
  throwFileSizeLimit: true,
});

export function registerUploadRoute(app: FastifyInstance, operationId: OperationId, operation: EndpointDefinition) {
  app.register(uploadRoute, { operationId, operation });
}

export function registerDownloadRoute(app: FastifyInstance, operationId: OperationId, operation: EndpointDefinition) {
  app.route({
    method: operation.method,
    url: `/v1${operation.path}`,
    schema: { params: operation.params, querystring: querySchemaOf(operation) },
    config: { operationId },
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const call = admitted(request);
      return replyWithFile(
        request,
        reply,
        await filesService.content(call.service, (request.params as { id: string }).id),
      );
    },
  });
}

/** A file's bytes as the answer (the API's download and the console's): its headers, or 304 for its ETag. */
export function replyWithFile(
  request: FastifyRequest,
  reply: FastifyReply,
  { file, bytes }: Awaited<ReturnType<typeof filesService.content>>,
) {
  const etag = `"${file.sha256}"`;
  // What a browser opens from here runs nothing: uploaded HTML or SVG stays inert on our origin.
  reply
    .header('etag', etag)
    .header('cache-control', 'private')
    .header('content-security-policy', "default-src 'none'; sandbox")
    .header('x-content-type-options', 'nosniff');
  if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send();
  return reply
    .code(200)
    .header('content-type', file.mime_type)
    .header('content-length', file.size)
    .header('content-disposition', dispositionOf(file))
    .send(bytes());
}

/** `If-None-Match`: `*`, or a list of ETags, weak ones compared by their value (RFC 9110, 13.1.2). */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/** `inline` for images, `attachment` otherwise, with the filename in ASCII and in UTF-8 (RFC 6266). */
function dispositionOf(file: { mime_type: string; filename: string | null }): string {
  const kind = file.mime_type.startsWith('image/') ? 'inline' : 'attachment';
  if (!file.filename) return kind;
  const ascii = file.filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const encoded = encodeURIComponent(file.filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
