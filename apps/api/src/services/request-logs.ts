import type { Insertable } from 'kysely';
import { encodeTime } from 'ulid';
import type { RequestLogTable } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { type RequestLogFilter, type RequestLogRow, requestLogsRepository } from '../repositories/request-logs.js';
import { type AccountContext, type UnscopedContext, page, scopeOf } from './context.js';

export type RequestLogEntry = Insertable<RequestLogTable>;
/** The most lines `record` takes at once, and the most it writes fastest. */
export { FULL_BATCH_LINES } from '../repositories/request-logs.js';

/** A log line as the console shows it: the key by name and last four characters, never its value. */
const toView = (row: RequestLogRow & { key_name: string | null; key_redacted: string | null }) => ({
  id: row.id,
  request_id: row.request_id,
  method: row.method,
  path: row.path,
  query: row.query,
  status: row.status,
  duration_ms: row.duration_ms,
  key: row.key_id ? { id: row.key_id, name: row.key_name, last_four: row.key_redacted?.slice(-4) ?? null } : null,
  request_body: row.request_body,
  error_body: row.error_body,
  created_at: row.created_at,
});

export type RequestLogView = ReturnType<typeof toView>;

/** The API requests of an account's keys (the console's Logs), as Stripe's dashboard keeps them. */
export const requestLogsService = {
  /** A batch of lines of any accounts, as the server's writer hands them over. */
  record: (ctx: UnscopedContext, entries: readonly RequestLogEntry[]) =>
    requestLogsRepository.insertMany(ctx.database.db, entries),

  async list(ctx: AccountContext, input: { filter: RequestLogFilter; limit: number; offset: number }) {
    const { rows, total } = await requestLogsRepository.list(scopeOf(ctx), input.filter, input);
    return page(rows.map(toView), total, input.limit, input.offset);
  },

  async retrieve(ctx: AccountContext, requestId: string): Promise<RequestLogView> {
    const row = await requestLogsRepository.findByRequestId(scopeOf(ctx), requestId);
    if (!row) throw ApiError.notFound('request', requestId);
    return toView(row);
  },

  /** Lines older than `days`, of every account (the worker's prune job). */
  prune: (ctx: UnscopedContext, days: number) =>
    requestLogsRepository.prune(ctx.database.db, `rl_${encodeTime(Date.now() - days * 86_400_000, 10)}`),
};
