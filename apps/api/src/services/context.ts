import type * as z from 'zod';
import type { DatabaseHandle } from '../db/database.js';
import { runTransaction } from '../db/transactions.js';
import type { Settings } from '../settings.js';
import { TenantScope } from '../repositories/tenant.js';

/** What every service verb runs with: the database and the account it acts for. */
export interface ServiceContext {
  database: DatabaseHandle;
  accountId: string;
  settings: Settings;
}

/** What a verb that runs before any account is known gets: authentication, sign-in, the operator's commands. */
export type UnscopedContext = Pick<ServiceContext, 'database'>;

/** What a verb of one account that needs nothing else of the request gets (the console's lists of keys and people). */
export type AccountContext = Pick<ServiceContext, 'database' | 'accountId'>;

/** Reads scoped to the context's account (inside its transaction, if it has one). */
export const scopeOf = (ctx: AccountContext): TenantScope =>
  new TenantScope(ctx.database.db, ctx.accountId, ctx.database.capabilities);

/**
 * Runs `work` with a context whose database calls all run in one transaction: the context's own
 * when it has one (an idempotent request, a workflow step), else a new one, run again from the
 * start on a deadlock or a serialization failure (db/transactions.ts). The one way services, the
 * operation runner and the worker open a transaction: `db.transaction()` inside one would fail.
 */
export const transaction = <C extends { database: DatabaseHandle }, T>(
  ctx: C,
  work: (tx: C) => Promise<T>,
): Promise<T> =>
  runTransaction(ctx.database.db, ctx.database.capabilities, (trx) =>
    work(trx === ctx.database.db ? ctx : { ...ctx, database: { ...ctx.database, db: trx } }),
  );

/** The input of a verb that changes one resource: its id, and the body validated by `Schema`. */
export interface Change<Schema extends z.ZodType> {
  id: string;
  body: z.output<Schema>;
}

/**
 * The list envelope of a page of rows. The page and its count are two statements, which may see
 * different commits: where they disagree, the total is the one the page shows (a short page ends the
 * list, a full one has at least its rows), so `has_more` always agrees with `total` and `data`.
 */
export function page<T>(data: T[], counted: number, limit: number, offset: number) {
  const end = offset + data.length;
  const total =
    data.length === limit ? Math.max(counted, end) : data.length > 0 || offset === 0 ? end : Math.min(counted, offset);
  return { data, total, limit, offset, has_more: end < total };
}

/** Search text as the repositories compare it: lower-cased, and its digits when it has any. */
export function foldedSearch(search: string | undefined): { search?: string; searchDigits?: string } {
  const text = search?.trim();
  if (!text) return {};
  const digits = /\d/.test(text) ? text.replace(/\D/g, '') : undefined;
  return { search: text.toLowerCase(), ...(digits ? { searchDigits: digits } : {}) };
}
