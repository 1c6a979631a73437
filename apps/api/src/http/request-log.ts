import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DatabaseHandle } from '../db/database.js';
import { nextUlid, now } from '../ids.js';
import { FULL_BATCH_LINES, type RequestLogEntry, requestLogsService } from '../services/request-logs.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The request log's writer: `flush()` writes what it holds now (tests, shutdown). */
    requestLog: RequestLogWriter;
  }
  interface FastifyRequest {
    /** The error body a failed request was answered with, for its log line. */
    answeredError: unknown;
  }
}

/** At most this much of a failed request's body and of its error is kept. */
const MAX_LOGGED_BYTES = 8 * 1024;
/** A batch is written once it holds this many lines, or after FLUSH_AFTER_MS. */
const BATCH_LINES = FULL_BATCH_LINES;
const FLUSH_AFTER_MS = 1_000;
/** Fields whose values never reach the log. */
const SECRET_FIELD = /token|secret|password|authorization|api_?key/i;

/**
 * Lines are written in batches, off the request path, because the benchmark targets of bench/README.md must hold
 * with the log on. A batch that fails to write is dropped with an error in the server's log: the log is a record
 * of the requests, never a reason to fail one.
 */
export class RequestLogWriter {
  private lines: RequestLogEntry[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly database: DatabaseHandle,
    private readonly log: FastifyInstance['log'],
  ) {}

  add(line: RequestLogEntry): void {
    this.lines.push(line);
    if (this.lines.length >= BATCH_LINES) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_AFTER_MS).unref();
  }

  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.lines;
    this.lines = [];
    if (batch.length === 0) return;
    try {
      await requestLogsService.record({ database: this.database }, batch);
    } catch (error) {
      this.log.error({ err: error, lines: batch.length }, 'request log batch not written');
    }
  }
}

/** Every `/v1` request of a known key goes to the log of its account (the console's Logs). */
export function installRequestLog(app: FastifyInstance, database: DatabaseHandle): void {
  const writer = new RequestLogWriter(database, app.log);
  app.decorate('requestLog', writer);
  app.decorateRequest('answeredError', undefined);
  app.addHook('onResponse', (request, reply, done) => {
    if (request.principal && request.url.startsWith('/v1/')) writer.add(lineOf(request, reply));
    done();
  });
  app.addHook('onClose', () => writer.flush());
}

function lineOf(request: FastifyRequest, reply: FastifyReply): RequestLogEntry {
  const principal = request.principal as NonNullable<FastifyRequest['principal']>;
  const [path, query] = request.url.split('?', 2) as [string, string | undefined];
  const failed = reply.statusCode >= 400;
  return {
    account_id: principal.account.id,
    id: `rl_${nextUlid()}`,
    request_id: request.id,
    key_id: principal.key.id,
    method: request.method,
    path,
    query: query || null,
    status: reply.statusCode,
    duration_ms: Math.round(reply.elapsedTime),
    request_body: failed && request.body !== undefined ? clipped(JSON.stringify(redacted(request.body))) : null,
    error_body: failed && request.answeredError !== undefined ? clipped(JSON.stringify(request.answeredError)) : null,
    created_at: now(),
  };
}

/** A copy with the values of secret-looking fields replaced, at any depth. */
function redacted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redacted);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, item]) => [name, SECRET_FIELD.test(name) ? '[redacted]' : redacted(item)]),
  );
}

const clipped = (text: string): string =>
  Buffer.byteLength(text) <= MAX_LOGGED_BYTES ? text : `${Buffer.from(text).subarray(0, MAX_LOGGED_BYTES - 3)}…`;
