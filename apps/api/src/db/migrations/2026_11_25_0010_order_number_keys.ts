import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../dialect.js';

/** Digits of the longest order number a request may give (CreateOrderBody's `number`), as of this migration. */
const ORDER_NUMBER_DIGITS = 64;

/**
 * Automatic order numbers count on from the highest all-digits number of any length: each order's
 * `number_key` is its number left-padded with zeros to 64 digits when it is all digits (null
 * otherwise), so that text order is numeric order. `number_value` (a bigint of numbers up to 15
 * digits) stopped counting past 999999999999999, and every later automatic number collided.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('orders').addColumn('number_key', 'text').execute();
  const zeros = '0'.repeat(ORDER_NUMBER_DIGITS);
  await (isPostgres(db)
    ? sql`update orders set number_key = lpad(number, ${sql.lit(ORDER_NUMBER_DIGITS)}, '0') where number ~ '^[0-9]+$'`
    : sql`update orders set number_key = substr(${sql.lit(zeros)} || number, -${sql.lit(ORDER_NUMBER_DIGITS)}) where number <> '' and number not glob '*[^0-9]*'`
  ).execute(db);
  await db.schema.createIndex('orders_number_key_idx').on('orders').columns(['account_id', 'number_key']).execute();
  await db.schema.dropIndex('orders_number_value_idx').execute();
  await db.schema.alterTable('orders').dropColumn('number_value').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('orders').addColumn('number_value', 'bigint').execute();
  await sql`update orders set number_value = cast(number as bigint) where number_key is not null and length(number) <= 15`.execute(
    db,
  );
  await db.schema.createIndex('orders_number_value_idx').on('orders').columns(['account_id', 'number_value']).execute();
  await db.schema.dropIndex('orders_number_key_idx').execute();
  await db.schema.alterTable('orders').dropColumn('number_key').execute();
}
