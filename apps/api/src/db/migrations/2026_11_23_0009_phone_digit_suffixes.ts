import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../dialect.js';

/**
 * SQLite: a search for phone digits becomes a range of one B-tree, where it was an FTS5 trigram
 * phrase.
 *
 * `contact_phone_suffixes` holds, for each contact, every suffix of its `phone_digits` of three
 * digits or more, with the contact's rowid (a 12-digit phone: 10 rows). A phone contains a
 * fragment exactly when the fragment begins one of its suffixes, so the contacts whose phone
 * contains `5559745` are the rows from `suffix >= '5559745'` to `suffix < '5559745:'` (`:` sorts
 * right after `9`): one range of the primary key. The FTS5 trigram table answered the same
 * question by reading the doclists of each of the fragment's trigrams (five for seven digits) and
 * checking their positions; digit trigrams are few and so their doclists long, and the match
 * was most of a phone search's time (bench/README.md).
 *
 * The digits leave the FTS table, which is rebuilt over the name and e-mail alone: a digits-only
 * search still asks it whether a name contains the digits, and its trigram doclists are shared by
 * all its columns, so a column filter (`{name_search} : "555…"`) read the phones' long doclists
 * as well. Digit trigrams in names and e-mails are rare, and those doclists short.
 *
 * Rows are keyed by the contact's rowid, like the FTS table's (`content_rowid`), and kept by
 * triggers on `contacts` in the transaction of each change. Like the FTS table, the table spans
 * accounts; the contacts it leads to are checked for the account (`TenantScope.selectFromFound`).
 *
 * Postgres is unchanged: its trigram GIN index on `phone_digits` (migration 0004) serves
 * `LIKE '%5559745%'` well within the benchmark's targets, and has no shared doclists to dilute.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) return;

  await sql`create table contact_phone_suffixes (
    suffix text not null,
    contact_rowid integer not null,
    primary key (suffix, contact_rowid)
  ) without rowid`.execute(db);
  await sql.raw(backfill).execute(db);
  await sql
    .raw(`create trigger contact_phone_suffixes_insert after insert on contacts begin ${add('new')} end`)
    .execute(db);
  await sql
    .raw(`create trigger contact_phone_suffixes_delete after delete on contacts begin ${remove('old')} end`)
    .execute(db);
  await sql
    .raw(`create trigger contact_phone_suffixes_update after update of phone_digits on contacts
    when old.phone_digits is not new.phone_digits
    begin ${remove('old')} ${add('new')} end`)
    .execute(db);

  await dropSearchTable(db);
  await createSearchTable(db, ['name_search', 'email_search']);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) return;
  for (const trigger of [
    'contact_phone_suffixes_insert',
    'contact_phone_suffixes_delete',
    'contact_phone_suffixes_update',
  ]) {
    await sql`drop trigger if exists ${sql.raw(trigger)}`.execute(db);
  }
  await sql`drop table contact_phone_suffixes`.execute(db);
  await dropSearchTable(db);
  await createSearchTable(db, ['name_search', 'email_search', 'phone_digits']);
}

/** The suffixes of three digits or more of `phone` (an expression), as rows of one column, `suffix`. */
const suffixesOf = (
  phone: string,
) => `with recursive position(i) as (select 1 union all select i + 1 from position where i < length(${phone}) - 2)
  select substr(${phone}, i) as suffix from position where i <= length(${phone}) - 2`;
const add = (row: 'new') =>
  `insert into contact_phone_suffixes (suffix, contact_rowid) select suffix, ${row}.rowid from (${suffixesOf(`${row}.phone_digits`)});`;
const remove = (row: 'old') =>
  `delete from contact_phone_suffixes where contact_rowid = ${row}.rowid and suffix in (${suffixesOf(`${row}.phone_digits`)});`;
/** Every contact's suffixes, in the table's order (a sorted load builds the B-tree page by page). */
const backfill = `insert into contact_phone_suffixes (suffix, contact_rowid)
  with recursive position(i) as (select 1 union all select i + 1 from position where i < (select max(length(phone_digits)) from contacts) - 2)
  select substr(c.phone_digits, p.i), c.rowid from contacts c join position p on p.i <= length(c.phone_digits) - 2 order by 1, 2`;

/** The FTS5 trigram table over `contacts` (migration 0004) and the triggers that keep it. */
async function createSearchTable(db: Kysely<any>, columns: string[]): Promise<void> {
  const list = columns.join(', ');
  const values = (row: 'new' | 'old') => columns.map((column) => `${row}.${column}`).join(', ');
  await sql
    .raw(
      `create virtual table contacts_search using fts5(${list}, content='contacts', content_rowid='rowid', tokenize='trigram')`,
    )
    .execute(db);
  await sql.raw(`insert into contacts_search(rowid, ${list}) select rowid, ${list} from contacts`).execute(db);
  await sql
    .raw(`create trigger contacts_search_insert after insert on contacts begin
    insert into contacts_search(rowid, ${list}) values (new.rowid, ${values('new')});
  end`)
    .execute(db);
  await sql
    .raw(`create trigger contacts_search_delete after delete on contacts begin
    insert into contacts_search(contacts_search, rowid, ${list}) values ('delete', old.rowid, ${values('old')});
  end`)
    .execute(db);
  await sql
    .raw(`create trigger contacts_search_update after update of ${list} on contacts begin
    insert into contacts_search(contacts_search, rowid, ${list}) values ('delete', old.rowid, ${values('old')});
    insert into contacts_search(rowid, ${list}) values (new.rowid, ${values('new')});
  end`)
    .execute(db);
}

async function dropSearchTable(db: Kysely<any>): Promise<void> {
  for (const trigger of ['contacts_search_insert', 'contacts_search_delete', 'contacts_search_update'])
    await sql`drop trigger ${sql.raw(trigger)}`.execute(db);
  await sql`drop table contacts_search`.execute(db);
}
