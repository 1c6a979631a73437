import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../dialect.js';

// Substring search over contact names, e-mails and phone digits (`LIKE '%ana%'`) without scanning:
// Postgres answers LIKE from trigram GIN indexes (pg_trgm) as it is. SQLite has no such index
// type; its search goes through the FTS5 table below, whose trigram tokenizer serves LIKE too,
// kept in step with contacts by triggers.

export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) {
    await sql`create extension if not exists pg_trgm`.execute(db);
    await sql`create index contacts_name_trgm_idx on contacts using gin (name_search gin_trgm_ops)`.execute(db);
    await sql`create index contacts_email_trgm_idx on contacts using gin (email_search gin_trgm_ops)`.execute(db);
    await sql`create index contacts_phone_trgm_idx on contacts using gin (phone_digits gin_trgm_ops)`.execute(db);
    return;
  }
  await sql`create virtual table contacts_search using fts5(name_search, email_search, phone_digits, content='contacts', content_rowid='rowid', tokenize='trigram')`.execute(
    db,
  );
  await sql`insert into contacts_search(rowid, name_search, email_search, phone_digits) select rowid, name_search, email_search, phone_digits from contacts`.execute(
    db,
  );
  await sql`create trigger contacts_search_insert after insert on contacts begin
    insert into contacts_search(rowid, name_search, email_search, phone_digits) values (new.rowid, new.name_search, new.email_search, new.phone_digits);
  end`.execute(db);
  await sql`create trigger contacts_search_delete after delete on contacts begin
    insert into contacts_search(contacts_search, rowid, name_search, email_search, phone_digits) values ('delete', old.rowid, old.name_search, old.email_search, old.phone_digits);
  end`.execute(db);
  await sql`create trigger contacts_search_update after update of name_search, email_search, phone_digits on contacts begin
    insert into contacts_search(contacts_search, rowid, name_search, email_search, phone_digits) values ('delete', old.rowid, old.name_search, old.email_search, old.phone_digits);
    insert into contacts_search(rowid, name_search, email_search, phone_digits) values (new.rowid, new.name_search, new.email_search, new.phone_digits);
  end`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) {
    for (const index of ['contacts_name_trgm_idx', 'contacts_email_trgm_idx', 'contacts_phone_trgm_idx'])
      await db.schema.dropIndex(index).ifExists().execute();
    return;
  }
  for (const trigger of ['contacts_search_insert', 'contacts_search_delete', 'contacts_search_update'])
    await sql`drop trigger if exists ${sql.raw(trigger)}`.execute(db);
  await sql`drop table if exists contacts_search`.execute(db);
}
