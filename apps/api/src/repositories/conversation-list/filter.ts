import { type SelectQueryBuilder, sql } from 'kysely';
import type { ConversationCountTable, ConversationTable } from '../../db/schema.js';
import type { TenantScope } from '../tenant.js';

/**
 * The filters of a conversation list, declared once: each is a column of `conversations` that every
 * plan compares for equality, and of migration 0006's `conversation_counts`, which totals it. A filter
 * the counters do not keep fails to compile here.
 */
export const FILTER_COLUMNS = ['status', 'platform'] as const satisfies readonly (keyof ConversationTable &
  keyof ConversationCountTable)[];
export type FilterColumn = (typeof FILTER_COLUMNS)[number];

/** What a conversation list selects: the declared filters, one contact's conversations, and a search of the contacts. */
export type ConversationFilter = { [K in FilterColumn]?: ConversationTable[K] | undefined } & {
  /** Only this contact's conversations (the contact plan). */
  contactId?: string | undefined;
  /** Lower-cased search text. */
  search?: string | undefined;
  /** Digits of the search, when it holds any. */
  searchDigits?: string | undefined;
};

/** The declared filters of a request's query: a filter the query does not carry fails to compile at the caller. */
export const filtersOf = <Q extends { [K in FilterColumn]?: ConversationTable[K] | undefined }>(
  query: Q & (FilterColumn extends keyof Q ? unknown : never),
): ConversationFilter => Object.fromEntries(FILTER_COLUMNS.map((column) => [column, query[column]]));

/** Whether any declared filter narrows the list (beyond a search). */
export const isNarrowed = (filter: ConversationFilter): boolean =>
  FILTER_COLUMNS.some((column) => filter[column] !== undefined);

/** The declared filters' conditions on `table` (`conversations` or its counters), added to a query. */
// biome-ignore lint/suspicious/noExplicitAny: any query of a table that has the filter columns.
export function whereFiltered<Q extends SelectQueryBuilder<any, any, any>>(
  query: Q,
  table: 'conversations' | 'conversation_counts' | 'c',
  filter: ConversationFilter,
): Q {
  let filtered = query;
  for (const column of FILTER_COLUMNS) {
    const value = filter[column];
    if (value !== undefined) filtered = filtered.where(sql.ref(`${table}.${column}`), '=', value) as Q;
  }
  return filtered;
}

/**
 * Which filters a statement compiled once per shape (preparedByShape) has, and the values it binds
 * for them (undefined: not in its shape).
 */
export type FilterShape = Record<FilterColumn, boolean>;
export type FilterValues = { accountId: string } & { [K in FilterColumn]: ConversationTable[K] | undefined };

export const filterShape = (filter: ConversationFilter): FilterShape =>
  Object.fromEntries(FILTER_COLUMNS.map((column) => [column, filter[column] !== undefined])) as FilterShape;

export const filterValues = (scope: TenantScope, filter: ConversationFilter): FilterValues =>
  ({
    accountId: scope.accountId,
    ...Object.fromEntries(FILTER_COLUMNS.map((column) => [column, filter[column]])),
  }) as FilterValues;

/** The filter a statement of this shape is built for, from its values (placeholders while it is built). */
export const filterOf = (shape: FilterShape, values: FilterValues): ConversationFilter =>
  Object.fromEntries(FILTER_COLUMNS.map((column) => [column, shape[column] ? values[column] : undefined]));
