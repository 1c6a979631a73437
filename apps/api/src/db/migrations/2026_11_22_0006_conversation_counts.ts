import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../dialect.js';

/**
 * Exact list totals without counting: the number of conversations of each account by status and
 * platform, kept by triggers in the transaction of every insert, delete (cascades from a contact
 * included) and change of status or platform. A list's `total` without a search is then a sum of
 * at most nine rows, where counting the filter's index entries grew with the account (bench/README.md
 * has the figures). Sending a message changes neither column, so the hot
 * write path never touches these rows.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('conversation_counts')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('platform', 'text', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('conversation_counts_pk', ['account_id', 'status', 'platform'])
    .execute();
  await sql`insert into conversation_counts (account_id, status, platform, count)
    select account_id, status, platform, count(*) from conversations group by account_id, status, platform`.execute(db);

  if (isPostgres(db)) {
    await sql`create function conversation_counts_apply(account text, status_ text, platform_ text, delta bigint) returns void language sql as $$
      insert into conversation_counts (account_id, status, platform, count) values (account, status_, platform_, delta)
      on conflict (account_id, status, platform) do update set count = conversation_counts.count + excluded.count
    $$`.execute(db);
    await sql`create function conversation_counts_keep() returns trigger language plpgsql as $$
      begin
        if tg_op in ('UPDATE', 'DELETE') then perform conversation_counts_apply(old.account_id, old.status, old.platform, -1); end if;
        if tg_op in ('UPDATE', 'INSERT') then perform conversation_counts_apply(new.account_id, new.status, new.platform, 1); end if;
        return null;
      end
    $$`.execute(db);
    await sql`create trigger conversation_counts_insert_delete after insert or delete on conversations
      for each row execute function conversation_counts_keep()`.execute(db);
    await sql`create trigger conversation_counts_update after update of status, platform on conversations
      for each row when (old.status is distinct from new.status or old.platform is distinct from new.platform)
      execute function conversation_counts_keep()`.execute(db);
    return;
  }
  const add = (row: 'new' | 'old', delta: 1 | -1) =>
    sql.raw(`
    insert into conversation_counts (account_id, status, platform, count) values (${row}.account_id, ${row}.status, ${row}.platform, ${delta})
      on conflict (account_id, status, platform) do update set count = count + ${delta};`);
  await sql`create trigger conversation_counts_insert after insert on conversations begin ${add('new', 1)} end`.execute(
    db,
  );
  await sql`create trigger conversation_counts_delete after delete on conversations begin ${add('old', -1)} end`.execute(
    db,
  );
  await sql`create trigger conversation_counts_update after update of status, platform on conversations
    when old.status is not new.status or old.platform is not new.platform
    begin ${add('old', -1)} ${add('new', 1)} end`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) {
    await sql`drop trigger if exists conversation_counts_insert_delete on conversations`.execute(db);
    await sql`drop trigger if exists conversation_counts_update on conversations`.execute(db);
    await sql`drop function if exists conversation_counts_keep()`.execute(db);
    await sql`drop function if exists conversation_counts_apply(text, text, text, bigint)`.execute(db);
  } else {
    for (const trigger of ['conversation_counts_insert', 'conversation_counts_delete', 'conversation_counts_update'])
      await sql`drop trigger if exists ${sql.raw(trigger)}`.execute(db);
  }
  await db.schema.dropTable('conversation_counts').ifExists().execute();
}
