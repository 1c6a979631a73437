import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../dialect.js';

/**
 * The exact number of contacts with each tag, per account, kept by triggers on `contact_tags` in
 * the transaction of every insert, delete (a contact's deletion cascades to its rows) and change
 * of a row's tag, whoever writes it: contacts' creation and changes, tag renames and deletions,
 * workflow steps. `GET /contacts?tag=` then reads its `total` from one row, where counting the
 * tag's index entries grew with the account (bench/README.md). A count that falls to zero keeps
 * its row: the tag may come back, and a list of tags skips it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('contact_tag_counts')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('tag', 'text', (c) => c.notNull())
    .addColumn('contacts', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('contact_tag_counts_pk', ['account_id', 'tag'])
    .execute();
  await sql`insert into contact_tag_counts (account_id, tag, contacts)
    select account_id, tag, count(*) from contact_tags group by account_id, tag`.execute(db);

  if (isPostgres(db)) {
    await sql`create function contact_tag_counts_apply(account text, tag_ text, delta bigint)
      returns void language sql as $$
      insert into contact_tag_counts (account_id, tag, contacts) values (account, tag_, delta)
      on conflict (account_id, tag) do update set contacts = contact_tag_counts.contacts + excluded.contacts
    $$`.execute(db);
    await sql`create function contact_tag_counts_keep() returns trigger language plpgsql as $$
      begin
        if tg_op in ('UPDATE', 'DELETE') then perform contact_tag_counts_apply(old.account_id, old.tag, -1); end if;
        if tg_op in ('UPDATE', 'INSERT') then perform contact_tag_counts_apply(new.account_id, new.tag, 1); end if;
        return null;
      end
    $$`.execute(db);
    await sql`create trigger contact_tag_counts_insert_delete after insert or delete on contact_tags
      for each row execute function contact_tag_counts_keep()`.execute(db);
    await sql`create trigger contact_tag_counts_update after update of account_id, tag on contact_tags
      for each row when (old.account_id is distinct from new.account_id or old.tag is distinct from new.tag)
      execute function contact_tag_counts_keep()`.execute(db);
    return;
  }
  const add = (row: 'new' | 'old', delta: 1 | -1) =>
    sql.raw(`
    insert into contact_tag_counts (account_id, tag, contacts)
      values (${row}.account_id, ${row}.tag, ${delta})
      on conflict (account_id, tag) do update set contacts = contacts + ${delta};`);
  await sql`create trigger contact_tag_counts_insert after insert on contact_tags
    begin ${add('new', 1)} end`.execute(db);
  await sql`create trigger contact_tag_counts_delete after delete on contact_tags
    begin ${add('old', -1)} end`.execute(db);
  await sql`create trigger contact_tag_counts_update after update of account_id, tag on contact_tags
    when old.account_id is not new.account_id or old.tag is not new.tag
    begin ${add('old', -1)} ${add('new', 1)} end`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) {
    await sql`drop trigger if exists contact_tag_counts_insert_delete on contact_tags`.execute(db);
    await sql`drop trigger if exists contact_tag_counts_update on contact_tags`.execute(db);
    await sql`drop function if exists contact_tag_counts_keep()`.execute(db);
    await sql`drop function if exists contact_tag_counts_apply(text, text, bigint)`.execute(db);
  } else {
    for (const trigger of ['contact_tag_counts_insert', 'contact_tag_counts_delete', 'contact_tag_counts_update'])
      await sql`drop trigger if exists ${sql.raw(trigger)}`.execute(db);
  }
  await db.schema.dropTable('contact_tag_counts').ifExists().execute();
}
