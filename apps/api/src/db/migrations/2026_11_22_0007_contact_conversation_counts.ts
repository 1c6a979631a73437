import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../dialect.js';

/**
 * What a conversation search over many contacts needs without touching their conversations:
 *
 * - `contacts.conversation_count`, the number of each contact's conversations, kept by triggers
 *   in the transaction of every insert and delete of a conversation (cascades from the contact
 *   included) and of a change of its `contact_id`. The exact `total` of a search without a status
 *   or platform filter is then the sum of this column over the matching contacts, where it was
 *   one probe of `conversations_contact_idx` per contact.
 *   Sending a message changes neither, so the hot write path never touches contacts.
 * - `conversations_activity_idx` carries `contact_id`, so the walk in activity order that finds
 *   a common search's page reads the index alone (SQLite: a column after the key; Postgres:
 *   `INCLUDE`): the walk looked up each of its entries' rows to learn the contact.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('contacts')
    .addColumn('conversation_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update contacts set conversation_count = (
    select count(*) from conversations where conversations.account_id = contacts.account_id and conversations.contact_id = contacts.id)`.execute(
    db,
  );

  await db.schema.dropIndex('conversations_activity_idx').execute();
  if (isPostgres(db)) {
    await sql`create index conversations_activity_idx on conversations (account_id, last_activity_at, id) include (contact_id)`.execute(
      db,
    );
    await sql`create function contact_conversation_count_keep() returns trigger language plpgsql as $$
      begin
        if tg_op in ('UPDATE', 'DELETE') then
          update contacts set conversation_count = conversation_count - 1 where account_id = old.account_id and id = old.contact_id;
        end if;
        if tg_op in ('UPDATE', 'INSERT') then
          update contacts set conversation_count = conversation_count + 1 where account_id = new.account_id and id = new.contact_id;
        end if;
        return null;
      end
    $$`.execute(db);
    await sql`create trigger contact_conversation_count_insert_delete after insert or delete on conversations
      for each row execute function contact_conversation_count_keep()`.execute(db);
    await sql`create trigger contact_conversation_count_update after update of account_id, contact_id on conversations
      for each row when (old.account_id is distinct from new.account_id or old.contact_id is distinct from new.contact_id)
      execute function contact_conversation_count_keep()`.execute(db);
    return;
  }
  await db.schema
    .createIndex('conversations_activity_idx')
    .on('conversations')
    .columns(['account_id', 'last_activity_at', 'id', 'contact_id'])
    .execute();
  const add = (row: 'new' | 'old', delta: '+ 1' | '- 1') =>
    sql.raw(
      `update contacts set conversation_count = conversation_count ${delta} where account_id = ${row}.account_id and id = ${row}.contact_id;`,
    );
  await sql`create trigger contact_conversation_count_insert after insert on conversations begin ${add('new', '+ 1')} end`.execute(
    db,
  );
  await sql`create trigger contact_conversation_count_delete after delete on conversations begin ${add('old', '- 1')} end`.execute(
    db,
  );
  await sql`create trigger contact_conversation_count_update after update of account_id, contact_id on conversations
    when old.account_id is not new.account_id or old.contact_id is not new.contact_id
    begin ${add('old', '- 1')} ${add('new', '+ 1')} end`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) {
    await sql`drop trigger if exists contact_conversation_count_insert_delete on conversations`.execute(db);
    await sql`drop trigger if exists contact_conversation_count_update on conversations`.execute(db);
    await sql`drop function if exists contact_conversation_count_keep()`.execute(db);
  } else {
    for (const trigger of [
      'contact_conversation_count_insert',
      'contact_conversation_count_delete',
      'contact_conversation_count_update',
    ])
      await sql`drop trigger if exists ${sql.raw(trigger)}`.execute(db);
  }
  await db.schema.dropIndex('conversations_activity_idx').execute();
  await db.schema
    .createIndex('conversations_activity_idx')
    .on('conversations')
    .columns(['account_id', 'last_activity_at', 'id'])
    .execute();
  await db.schema.alterTable('contacts').dropColumn('conversation_count').execute();
}
