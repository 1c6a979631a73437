import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../dialect.js';

/**
 * A conversation search for a three-character name fragment (`?search=tin`) without reading the
 * contacts it matches:
 *
 * - `conversations.contact_name_search`, a copy of the contact's `name_search`, kept by triggers
 *   (filled when a conversation is created or moves to another contact, rewritten when the
 *   contact is renamed), and carried by `conversations_activity_idx` (SQLite: a last column;
 *   Postgres: `INCLUDE`). The page of such a search walks the account's conversations newest
 *   first and keeps those whose copy contains the fragment, from the index alone, where it first
 *   read every matching contact to build the set their conversations were checked against.
 * - `conversation_name_trigrams`: per account and trigram (three consecutive characters of a
 *   `name_search`), the number of conversations whose contact's name contains it, kept by
 *   triggers on the copy above (a conversation created, deleted, moved to another contact, its
 *   contact renamed). The exact `total` of a search for a three-character fragment without a
 *   status or platform filter is then one row, where it was the sum of `conversation_count` over
 *   the matching contacts. Longer fragments contain several trigrams, and a name that contains
 *   them all may still not contain the fragment: those are counted as before.
 *
 * Sending a message changes none of these columns: the hot write path is untouched. Creating a
 * conversation updates about a dozen counter rows (one per distinct trigram of the name), in the
 * order of the trigrams, so concurrent creations on Postgres wait for each other rather than
 * deadlock. The backfill rewrites every conversation row (about 2 s per 200k on SQLite).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('conversations').addColumn('contact_name_search', 'text').execute();
  await sql`update conversations set contact_name_search = (
    select name_search from contacts where contacts.account_id = conversations.account_id and contacts.id = conversations.contact_id)`.execute(
    db,
  );
  await db.schema
    .createTable('conversation_name_trigrams')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('trigram', 'text', (c) => c.notNull())
    .addColumn('conversations', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('conversation_name_trigrams_pk', ['account_id', 'trigram'])
    .execute();
  await db.schema.dropIndex('conversations_activity_idx').execute();

  if (isPostgres(db)) {
    await sql`insert into conversation_name_trigrams (account_id, trigram, conversations)
      select c.account_id, t.trigram, count(*) from conversations c
      cross join lateral (select distinct substr(c.contact_name_search, i, 3) as trigram from generate_series(1, char_length(c.contact_name_search) - 2) i) t
      group by c.account_id, t.trigram`.execute(db);
    await sql`create index conversations_activity_idx on conversations (account_id, last_activity_at, id) include (contact_id, contact_name_search)`.execute(
      db,
    );
    // Adds `delta` to each distinct trigram of `name`, in trigram order (see above).
    await sql`create function conversation_name_trigrams_apply(account text, name text, delta bigint) returns void language sql as $$
      insert into conversation_name_trigrams (account_id, trigram, conversations)
        select account, trigram, delta from (select distinct substr(name, i, 3) as trigram from generate_series(1, char_length(name) - 2) i) t order by trigram
      on conflict (account_id, trigram) do update set conversations = conversation_name_trigrams.conversations + excluded.conversations
    $$`.execute(db);
    await sql`create function conversation_name_trigrams_keep() returns trigger language plpgsql as $$
      begin
        if tg_op in ('UPDATE', 'DELETE') then perform conversation_name_trigrams_apply(old.account_id, old.contact_name_search, -1); end if;
        if tg_op in ('UPDATE', 'INSERT') then perform conversation_name_trigrams_apply(new.account_id, new.contact_name_search, 1); end if;
        return null;
      end
    $$`.execute(db);
    await sql`create function conversation_contact_name_fill() returns trigger language plpgsql as $$
      begin
        new.contact_name_search := (select name_search from contacts where account_id = new.account_id and id = new.contact_id);
        return new;
      end
    $$`.execute(db);
    await sql`create function contact_name_search_follow() returns trigger language plpgsql as $$
      begin
        update conversations set contact_name_search = new.name_search where account_id = new.account_id and contact_id = new.id;
        return null;
      end
    $$`.execute(db);
    await sql`create trigger conversation_contact_name_fill before insert or update of account_id, contact_id on conversations
      for each row execute function conversation_contact_name_fill()`.execute(db);
    await sql`create trigger conversation_name_trigrams_insert_delete after insert or delete on conversations
      for each row execute function conversation_name_trigrams_keep()`.execute(db);
    // Not `update of contact_name_search`: a column changed by the BEFORE trigger above is not in
    // the statement's SET list, so only the condition tells.
    await sql`create trigger conversation_name_trigrams_update after update on conversations
      for each row when (old.account_id is distinct from new.account_id or old.contact_name_search is distinct from new.contact_name_search)
      execute function conversation_name_trigrams_keep()`.execute(db);
    await sql`create trigger contact_name_search_follow after update of name_search on contacts
      for each row when (old.name_search is distinct from new.name_search)
      execute function contact_name_search_follow()`.execute(db);
    return;
  }

  // The distinct trigrams of `row`'s copy of the name, with the account and `delta`.
  const trigrams = (row: 'new' | 'old', delta: string) => `
    with recursive position(i) as (select 1 union all select i + 1 from position where i < length(${row}.contact_name_search) - 2)
    select distinct ${row}.account_id, substr(${row}.contact_name_search, i, 3), ${delta} from position where length(${row}.contact_name_search) >= 3`;
  const apply = (row: 'new' | 'old', delta: 1 | -1) =>
    sql.raw(`
    insert into conversation_name_trigrams (account_id, trigram, conversations) ${trigrams(row, String(delta))}
      on conflict (account_id, trigram) do update set conversations = conversations + ${delta};`);
  const fill = sql.raw(`
    update conversations set contact_name_search = (select name_search from contacts where account_id = new.account_id and id = new.contact_id)
      where account_id = new.account_id and id = new.id;`);

  await sql
    .raw(`insert into conversation_name_trigrams (account_id, trigram, conversations)
    select account_id, trigram, count(*) from (
      select distinct c.account_id, c.id, substr(c.contact_name_search, p.i, 3) as trigram
      from conversations c join (with recursive p(i) as (select 1 union all select i + 1 from p where i < (select max(length(contact_name_search)) from conversations) - 2) select i from p) p
        on p.i <= length(c.contact_name_search) - 2)
    group by account_id, trigram`)
    .execute(db);
  await db.schema
    .createIndex('conversations_activity_idx')
    .on('conversations')
    .columns(['account_id', 'last_activity_at', 'id', 'contact_id', 'contact_name_search'])
    .execute();
  // A new conversation counts the copy it was written with (none, from the API), then takes its
  // contact's name: the update trigger below counts the change.
  await sql`create trigger conversation_name_trigrams_insert after insert on conversations begin ${apply('new', 1)} ${fill} end`.execute(
    db,
  );
  await sql`create trigger conversation_name_trigrams_delete after delete on conversations begin ${apply('old', -1)} end`.execute(
    db,
  );
  await sql`create trigger conversation_name_trigrams_update after update of account_id, contact_name_search on conversations
    when old.account_id is not new.account_id or old.contact_name_search is not new.contact_name_search
    begin ${apply('old', -1)} ${apply('new', 1)} end`.execute(db);
  await sql`create trigger conversation_contact_name_fill after update of account_id, contact_id on conversations
    when old.account_id is not new.account_id or old.contact_id is not new.contact_id
    begin ${fill} end`.execute(db);
  await sql`create trigger contact_name_search_follow after update of name_search on contacts
    when old.name_search is not new.name_search
    begin update conversations set contact_name_search = new.name_search where account_id = new.account_id and contact_id = new.id; end`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) {
    await sql`drop trigger if exists contact_name_search_follow on contacts`.execute(db);
    for (const trigger of [
      'conversation_contact_name_fill',
      'conversation_name_trigrams_insert_delete',
      'conversation_name_trigrams_update',
    ]) {
      await sql`drop trigger if exists ${sql.raw(trigger)} on conversations`.execute(db);
    }
    for (const fn of [
      'contact_name_search_follow()',
      'conversation_contact_name_fill()',
      'conversation_name_trigrams_keep()',
      'conversation_name_trigrams_apply(text, text, bigint)',
    ]) {
      await sql`drop function if exists ${sql.raw(fn)}`.execute(db);
    }
  } else {
    for (const trigger of [
      'contact_name_search_follow',
      'conversation_contact_name_fill',
      'conversation_name_trigrams_insert',
      'conversation_name_trigrams_delete',
      'conversation_name_trigrams_update',
    ]) {
      await sql`drop trigger if exists ${sql.raw(trigger)}`.execute(db);
    }
  }
  await db.schema.dropTable('conversation_name_trigrams').execute();
  await db.schema.dropIndex('conversations_activity_idx').execute();
  if (isPostgres(db))
    await sql`create index conversations_activity_idx on conversations (account_id, last_activity_at, id) include (contact_id)`.execute(
      db,
    );
  else
    await db.schema
      .createIndex('conversations_activity_idx')
      .on('conversations')
      .columns(['account_id', 'last_activity_at', 'id', 'contact_id'])
      .execute();
  await db.schema.alterTable('conversations').dropColumn('contact_name_search').execute();
}
