import { CompiledQuery, type Insertable, type Selectable, sql } from 'kysely';
import type { RequestLogTable } from '../db/schema.js';
import { type Executor, type TenantScope, withTotal } from './tenant.js';

export type RequestLogRow = Selectable<RequestLogTable>;

/** What the console's log filters by; every field narrows. */
export interface RequestLogFilter {
  /** 2, 4 or 5: the status class. */
  statusClass?: 2 | 4 | 5 | undefined;
  /** A path prefix (`/v1/contacts`). */
  path?: string | undefined;
  keyId?: string | undefined;
  requestId?: string | undefined;
}

const filtered = (scope: TenantScope, filter: RequestLogFilter) => {
  let query = scope.selectFrom('request_logs');
  if (filter.statusClass)
    query = query
      .where('request_logs.status', '>=', filter.statusClass * 100)
      .where('request_logs.status', '<', filter.statusClass * 100 + 100);
  // A prefix compared as text, the same on both databases (LIKE would need an escape clause on SQLite).
  if (filter.path) query = query.where(sql`substr(request_logs.path, 1, ${filter.path.length})`, '=', filter.path);
  if (filter.keyId) query = query.where('request_logs.key_id', '=', filter.keyId);
  if (filter.requestId) query = query.where('request_logs.request_id', '=', filter.requestId);
  return query;
};

/** The columns a log line shows, with the key's name and redacted form when the key still exists. */
const withKey = (query: ReturnType<typeof filtered>) =>
  query
    .leftJoin('api_keys', (join) =>
      join
        .onRef('api_keys.account_id', '=', 'request_logs.account_id')
        .onRef('api_keys.id', '=', 'request_logs.key_id'),
    )
    .selectAll('request_logs')
    .select(['api_keys.name as key_name', 'api_keys.redacted as key_redacted']);

/** Every column of a log line, in the order a batch's statement binds them. */
const LINE_COLUMNS = Object.keys({
  account_id: true,
  id: true,
  request_id: true,
  key_id: true,
  method: true,
  path: true,
  query: true,
  status: true,
  duration_ms: true,
  request_body: true,
  error_body: true,
  created_at: true,
} satisfies Record<keyof RequestLogTable, true>) as (keyof RequestLogTable)[];

/** A full batch: the writer's under load, where its statement is worth keeping. */
export const FULL_BATCH_LINES = 500;
const fullBatchInserts = new WeakMap<Executor, string>();

/**
 * The insert of `count` lines; a full batch's is built by Kysely once per database: building and compiling its
 * thousands of values on every write cost SQLite's get-by-id target with the log on (bench/README.md).
 */
function batchInsertSql(db: Executor, count: number): string {
  const kept = count === FULL_BATCH_LINES ? fullBatchInserts.get(db) : undefined;
  if (kept !== undefined) return kept;
  const line = Object.fromEntries(LINE_COLUMNS.map((column) => [column, null])) as never;
  const text = db
    .insertInto('request_logs')
    .values(Array.from({ length: count }, () => line))
    .compile().sql;
  if (count === FULL_BATCH_LINES) fullBatchInserts.set(db, text);
  return text;
}

export const requestLogsRepository = {
  /** Rows of many accounts at once (at most a full batch): the writer's batch. */
  async insertMany(db: Executor, rows: readonly Insertable<RequestLogTable>[]) {
    if (rows.length === 0) return;
    const values = rows.flatMap((row) => LINE_COLUMNS.map((column) => row[column] ?? null));
    await db.executeQuery(CompiledQuery.raw(batchInsertSql(db, rows.length), values));
  },

  /** Newest first, ties by id descending. */
  async list(scope: TenantScope, filter: RequestLogFilter, page: { limit: number; offset: number }) {
    const base = filtered(scope, filter);
    // Ids are ULIDs: their order is the order the requests were logged in.
    const rows = withKey(base).orderBy('request_logs.id', 'desc').limit(page.limit).offset(page.offset).execute();
    return withTotal(rows, base);
  },

  /** The newest line of a request id (a client may send one twice). */
  findByRequestId: (scope: TenantScope, requestId: string) =>
    withKey(filtered(scope, { requestId })).orderBy('request_logs.id', 'desc').executeTakeFirst(),

  /** Lines logged before the time of `beforeId` (a ULID id), of every account, through the key's index. */
  prune: (db: Executor, beforeId: string) =>
    db
      .deleteFrom('request_logs')
      .where('account_id', 'in', db.selectFrom('accounts').select('id'))
      .where('id', '<', beforeId)
      .execute(),
};
