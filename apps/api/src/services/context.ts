import type { DatabaseHandle } from '../db/database.js';
import { TenantScope } from '../repositories/tenant.js';

/** What every service verb runs with: the database and the account it acts for. */
export interface ServiceContext {
  database: DatabaseHandle;
  accountId: string;
}

/** Reads outside a transaction. */
export const scopeOf = (ctx: ServiceContext): TenantScope => new TenantScope(ctx.database.db, ctx.accountId);

/** Runs `work` in one transaction, scoped to the context's account. */
export const inTransaction = <T>(ctx: ServiceContext, work: (scope: TenantScope) => Promise<T>): Promise<T> =>
  ctx.database.db.transaction().execute((trx) => work(new TenantScope(trx, ctx.accountId)));

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
