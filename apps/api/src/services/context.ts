import type { Transaction } from 'kysely';
import type { DatabaseHandle } from '../db/database.js';
import type { Database } from '../db/schema.js';
import type { Settings } from '../settings.js';
import type { KeyCheck } from '../repositories/key-check.js';
import { TenantScope } from '../repositories/tenant.js';

/** What every service verb runs with: the database and the account it acts for. */
export interface ServiceContext {
  database: DatabaseHandle;
  accountId: string;
  settings: Settings;
  /** A read operation's key check, still to be confirmed by its reads (repositories/key-check.ts). */
  keyCheck?: KeyCheck | undefined;
}

/** Reads outside a transaction (with the request's key check, if any). */
export const scopeOf = (ctx: ServiceContext): TenantScope => new TenantScope(ctx.database.db, ctx.accountId, ctx.keyCheck);

/**
 * Runs `work` in one transaction, scoped to the context's account. Inside a transaction already
 * (a workflow step calling a verb), it joins that one, so the step and its effects commit together.
 */
export const inTransaction = <T>(ctx: ServiceContext, work: (scope: TenantScope) => Promise<T>): Promise<T> =>
  ctx.database.db.isTransaction
    ? work(new TenantScope(ctx.database.db, ctx.accountId))
    : ctx.database.db.transaction().execute((trx) => work(new TenantScope(trx, ctx.accountId)));

/** The same context with its database calls running in `trx`. */
export const withinTransaction = (ctx: ServiceContext, trx: Transaction<Database>): ServiceContext => ({
  ...ctx,
  database: { ...ctx.database, db: trx },
});

/** The list envelope of a page of rows. */
export function page<T>(data: T[], total: number, limit: number, offset: number) {
  return { data, total, limit, offset, has_more: offset + data.length < total };
}

/** Search text as the repositories compare it: lower-cased, and its digits when it has any. */
export function searchTerms(search: string | undefined): { search?: string; searchDigits?: string } {
  const text = search?.trim();
  if (!text) return {};
  const digits = /\d/.test(text) ? text.replace(/\D/g, '') : undefined;
  return { search: text.toLowerCase(), ...(digits ? { searchDigits: digits } : {}) };
}
