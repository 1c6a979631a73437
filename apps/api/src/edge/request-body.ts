import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyInstance, preParsingHookHandler } from 'fastify';
import { ApiError } from '../errors.js';

/** Bodies larger than CONTRACT's limit are refused while they are read. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Deeper JSON is refused while it is read: nothing in the contract nests more than a few levels. */
export const MAX_JSON_DEPTH = 32;

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Fails the stream as soon as a body's JSON nests past MAX_JSON_DEPTH, so JSON.parse, which recurses and holds
 * the event loop, never sees it. Brackets inside strings do not count; malformed JSON is left to the parser.
 */
export class JsonDepthLimit extends Transform {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** Bytes received so far: Fastify compares it with Content-Length and bodyLimit. */
  receivedEncodedLength = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.receivedEncodedLength += chunk.length;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) this.inString = false;
      } else if (byte === QUOTE) {
        this.inString = true;
      } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
        if (++this.depth > MAX_JSON_DEPTH) {
          callback(ApiError.badRequest('body', 'json', `The body nests deeper than ${MAX_JSON_DEPTH} levels`));
          return;
        }
      } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
        this.depth--;
      }
    }
    callback(null, chunk);
  }
}

/**
 * Reads every JSON body through JsonDepthLimit. The limiter has a listener of its own because Fastify listens
 * only while it reads the body, and an unheard `error` event ends the process. Not `stream.pipeline`: it would
 * destroy the request, and with it the socket the 400 is written to.
 */
export const limitJsonDepth: preParsingHookHandler = (request, _reply, payload, done) => {
  const type = request.headers['content-type'];
  if (typeof type !== 'string' || !/json/i.test(type)) return done(null, payload);
  const limiter = new JsonDepthLimit();
  limiter.on('error', ignoreAnswered);
  // pipe() does not pass the source's errors on: an aborted request must end the limiter so its reader is told.
  payload.once('error', (error) => limiter.destroy(error));
  done(null, payload.pipe(limiter));
};

/** The error of a request already answered, or answered through Fastify's own listener. */
function ignoreAnswered(): void {}

/** Strict UTF-8: a body that is not valid UTF-8 is malformed, not silently repaired. */
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON bodies only (anything else is 400 `content_type`), within MAX_BODY_BYTES; an empty body counts as none. */
export function acceptJsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES },
    (_request, body: Buffer, done) => {
      if (body.length === 0) return done(null, undefined);
      try {
        done(null, JSON.parse(utf8.decode(body)));
      } catch {
        done(ApiError.badRequest('body', 'json', 'The body is not valid JSON'), undefined);
      }
    },
  );
  app.addHook('preParsing', limitJsonDepth);
}
