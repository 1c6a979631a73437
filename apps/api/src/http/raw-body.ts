import { ApiError } from '../errors.js';

/** Bodies larger than this are refused (CONTRACT: 1 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Deeper JSON is refused: nothing in the contract nests more than a few levels. */
export const MAX_JSON_DEPTH = 32;

/**
 * A request body as it arrived, not yet decoded. Decoding (content type, size, JSON) happens in
 * the procedure's input parser, after authentication and permission, so a request without a key
 * is a 401 whatever its body.
 */
export class RawBody {
  constructor(
    readonly contentType: string | undefined,
    readonly bytes: Buffer,
    readonly tooLarge: boolean,
  ) {}

  decode(): unknown {
    if (this.tooLarge) throw ApiError.badRequest('body', 'max_bytes', `The body is larger than ${MAX_BODY_BYTES} bytes`);
    if (this.bytes.length === 0) return undefined;
    const mediaType = this.contentType?.split(';')[0]?.trim().toLowerCase();
    if (mediaType !== 'application/json') {
      throw ApiError.badRequest('body', 'content_type', 'Send the body as JSON with "Content-Type: application/json"');
    }
    let text: string;
    let value: unknown;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(this.bytes);
      value = JSON.parse(text);
    } catch {
      throw ApiError.badRequest('body', 'json', 'The body is not valid JSON');
    }
    if (depthOf(value) > MAX_JSON_DEPTH) throw ApiError.badRequest('body', 'json', `The body nests deeper than ${MAX_JSON_DEPTH} levels`);
    return value;
  }
}

function depthOf(value: unknown, depth = 0): number {
  if (depth > MAX_JSON_DEPTH || value === null || typeof value !== 'object') return depth;
  let max = depth + 1;
  for (const inner of Object.values(value)) {
    max = Math.max(max, depthOf(inner, depth + 1));
    if (max > MAX_JSON_DEPTH) break;
  }
  return max;
}
