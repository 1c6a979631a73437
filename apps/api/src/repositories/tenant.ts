import {
  type Insertable,
  type Kysely,
  type SelectQueryBuilder,
  type Transaction,
  type UpdateQueryBuilder,
  type DeleteQueryBuilder,
  type UpdateResult,
  type DeleteResult,
  sql,
} from 'kysely';
import type { Dialect } from '../db/dialect.js';
import type { Database, TenantTable } from '../db/schema.js';

export type Executor = Kysely<Database> | Transaction<Database>;

/** Rows one insert statement takes at most: those of a wide table stay far below Postgres' limit on bound values. */
const INSERT_BATCH_ROWS = 500;

/** Inserts rows into a table, INSERT_BATCH_ROWS to a statement. */
export async function insertRows<T extends keyof Database>(
  db: Executor,
  table: T,
  rows: readonly Insertable<Database[T]>[],
): Promise<void> {
  for (let start = 0; start < rows.length; start += INSERT_BATCH_ROWS) {
    await db
      .insertInto(table)
      .values(rows.slice(start, start + INSERT_BATCH_ROWS) as never)
      .execute();
  }
}

/** A page of rows, read at once with how many rows `all` has (a list's `total`). */
export async function withTotal<R, T extends keyof Database>(
  rows: Promise<R[]>,
  all: SelectQueryBuilder<Database, T, NoSelection>,
): Promise<{ rows: R[]; total: number }> {
  const counted = all.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
  const [found, count] = await Promise.all([rows, counted]);
  return { rows: found, total: Number(count.total) };
}

/** What Kysely's `selectFrom` has selected so far: nothing (its own type for it). */
// biome-ignore lint/complexity/noBannedTypes: Kysely types a query that selects nothing yet with {}.
export type NoSelection = {};

/**
 * The one place that scopes queries to an account. Repositories start every query of tenant
 * data here, so the account filter is never written (or forgotten) by hand.
 */
export class TenantScope {
  constructor(
    readonly db: Executor,
    readonly accountId: string,
    /** The database's capabilities (DatabaseHandle.capabilities). */
    readonly dialect: Dialect,
  ) {}

  selectFrom<T extends TenantTable>(table: T): SelectQueryBuilder<Database, T, NoSelection> {
    return (this.db.selectFrom(table) as unknown as SelectQueryBuilder<Database, T, NoSelection>).where(
      sql.ref(`${table}.account_id`),
      '=',
      this.accountId,
    );
  }

  /**
   * `selectFrom` for a query whose rows another condition finds directly (the rowids of a match
   * in SQLite's FTS search table): on SQLite the account condition is written `+account_id = ?`,
   * which no index answers, so the planner starts from those rows and checks the account on each,
   * instead of walking the account's whole range of an index and checking each entry against the
   * matches (SQLite cannot estimate how many rows an FTS match returns). Postgres estimates both and
   * gets the plain condition.
   */
  selectFromFound<T extends TenantTable>(table: T): SelectQueryBuilder<Database, T, NoSelection> {
    if (!this.dialect.steeredPlans) return this.selectFrom(table);
    return (this.db.selectFrom(table) as unknown as SelectQueryBuilder<Database, T, NoSelection>).where(
      sql`+${sql.ref(`${table}.account_id`)}`,
      '=',
      this.accountId,
    );
  }

  updateTable<T extends TenantTable>(table: T): UpdateQueryBuilder<Database, T, T, UpdateResult> {
    return (this.db.updateTable(table) as unknown as UpdateQueryBuilder<Database, T, T, UpdateResult>).where(
      sql.ref(`${table}.account_id`),
      '=',
      this.accountId,
    );
  }

  deleteFrom<T extends TenantTable>(table: T): DeleteQueryBuilder<Database, T, DeleteResult> {
    return (this.db.deleteFrom(table) as unknown as DeleteQueryBuilder<Database, T, DeleteResult>).where(
      sql.ref(`${table}.account_id`),
      '=',
      this.accountId,
    );
  }

  /**
   * Inserts rows into a tenant table, stamped with this account's id: one statement for up to
   * INSERT_BATCH_ROWS rows, within both databases' limits on bound values.
   */
  async insert<T extends TenantTable>(
    table: T,
    rows: Omit<Insertable<Database[T]>, 'account_id'> | Omit<Insertable<Database[T]>, 'account_id'>[],
  ): Promise<void> {
    const list = (Array.isArray(rows) ? rows : [rows]).map((row) => ({ ...row, account_id: this.accountId }));
    await insertRows(this.db, table, list as Insertable<Database[T]>[]);
  }

  /** The same scope on another executor (a transaction). */
  with(db: Executor): TenantScope {
    return new TenantScope(db, this.accountId, this.dialect);
  }
}

/** Escapes `%`, `_` and `\` for a LIKE pattern used with `ESCAPE '\'`. */
export const likeContains = (fragment: string): string => `%${fragment.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
