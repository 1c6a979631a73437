import { type Kysely, sql } from 'kysely';

/**
 * Each event's place in its account's log (`position`), given after its transaction has
 * committed, so that the order of positions is the order in which events became visible: a
 * reader paging by position from a cursor never misses an event that committed late with an
 * earlier id. Existing events are numbered in (created_at, id) order.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('events').addColumn('position', 'integer').execute();
  await sql`update events set position = numbered.n
    from (select account_id, id, row_number() over (partition by account_id order by created_at, id) as n from events) as numbered
    where events.account_id = numbered.account_id and events.id = numbered.id`.execute(db);
  await db.schema
    .createIndex('events_position_idx')
    .on('events')
    .columns(['account_id', 'position'])
    .unique()
    .execute();
  await db.schema
    .createIndex('events_unpositioned_idx')
    .on('events')
    .columns(['account_id', 'created_at', 'id'])
    .where(sql.ref('position'), 'is', null)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('events_unpositioned_idx').execute();
  await db.schema.dropIndex('events_position_idx').execute();
  await db.schema.alterTable('events').dropColumn('position').execute();
}
