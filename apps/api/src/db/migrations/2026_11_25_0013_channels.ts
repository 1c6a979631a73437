import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../dialect.js';

/**
 * Channels (a WhatsApp number, a Facebook Page, an Instagram account) and what comes with them:
 * the webhook payloads Meta posts (stored before they are answered, processed by the worker), the
 * contacts' platform identities, the channel of a conversation, and a message's platform id,
 * error, media and last change. A contact known only on Messenger or Instagram has no phone.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('channels')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('platform', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('verify_token', 'text', (c) => c.notNull())
    // AES-256-GCM under CONVO_SECRET_KEY (secret-box.ts), never the plain values.
    .addColumn('access_token_sealed', 'text', (c) => c.notNull())
    .addColumn('app_secret_sealed', 'text', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('channels_pk', ['account_id', 'id'])
    .addUniqueConstraint('channels_external_id_unique', ['account_id', 'platform', 'external_id'])
    .execute();
  await db.schema
    .createIndex('channels_created_idx')
    .on('channels')
    .columns(['account_id', 'created_at', 'id'])
    .execute();
  // Meta's webhooks name the channel in their path, without an account.
  await db.schema.createIndex('channels_id_idx').on('channels').column('id').unique().execute();

  await db.schema
    .createTable('channel_payloads')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('channel_id', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    .addColumn('processed_at', 'text')
    /** JSON array of the entries that could not be processed, with why. */
    .addColumn('errors', 'text')
    .addPrimaryKeyConstraint('channel_payloads_pk', ['account_id', 'id'])
    .execute();
  await db.schema.createIndex('channel_payloads_received_idx').on('channel_payloads').column('received_at').execute();

  await db.schema
    .createTable('contact_identities')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('channel_id', 'text', (c) => c.notNull())
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('contact_id', 'text', (c) => c.notNull())
    .addColumn('platform', 'text', (c) => c.notNull())
    /** When the contact last wrote on this channel: the start of the 24-hour window. */
    .addColumn('last_inbound_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('contact_identities_pk', ['account_id', 'channel_id', 'external_id'])
    .addForeignKeyConstraint(
      'contact_identities_contact_fk',
      ['account_id', 'contact_id'],
      'contacts',
      ['account_id', 'id'],
      (fk) => fk.onDelete('cascade'),
    )
    .execute();
  await db.schema
    .createIndex('contact_identities_contact_idx')
    .on('contact_identities')
    .columns(['account_id', 'contact_id', 'created_at'])
    .execute();

  await db.schema.alterTable('conversations').addColumn('channel_id', 'text').execute();
  // Partial, so that the planners never take it for the account's other reads of conversations.
  await db.schema
    .createIndex('conversations_channel_contact_idx')
    .on('conversations')
    .columns(['account_id', 'channel_id', 'contact_id'])
    .where(sql.ref('channel_id'), 'is not', null)
    .execute();

  await db.schema.alterTable('messages').addColumn('platform_message_id', 'text').execute();
  await db.schema.alterTable('messages').addColumn('error', 'text').execute();
  await db.schema.alterTable('messages').addColumn('media', 'text').execute();
  await db.schema
    .alterTable('messages')
    .addColumn('updated_at', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await sql`update messages set updated_at = created_at`.execute(db);
  // Meta redelivers: a platform message id is stored once.
  await db.schema
    .createIndex('messages_platform_id_unique')
    .on('messages')
    .columns(['account_id', 'platform_message_id'])
    .unique()
    .where(sql.ref('platform_message_id'), 'is not', null)
    .execute();

  // The identities again on the contact (as its tags), so that reading a contact stays one lookup.
  await db.schema
    .alterTable('contacts')
    .addColumn('identities', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  if (isPostgres(db)) {
    await sql`alter table contacts alter column phone drop not null`.execute(db);
  } else {
    await rebuildSqliteTable(db, 'contacts', (create) => create.replace('"phone" text not null', '"phone" text'));
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`delete from contacts where phone is null`.execute(db);
  if (isPostgres(db)) {
    await sql`alter table contacts alter column phone set not null`.execute(db);
  } else {
    await rebuildSqliteTable(db, 'contacts', (create) => create.replace('"phone" text,', '"phone" text not null,'));
  }
  await db.schema.alterTable('contacts').dropColumn('identities').execute();
  await db.schema.dropIndex('messages_platform_id_unique').execute();
  for (const column of ['updated_at', 'media', 'error', 'platform_message_id'])
    await db.schema.alterTable('messages').dropColumn(column).execute();
  await db.schema.dropIndex('conversations_channel_contact_idx').execute();
  await db.schema.alterTable('conversations').dropColumn('channel_id').execute();
  await db.schema.dropTable('contact_identities').execute();
  await db.schema.dropTable('channel_payloads').execute();
  await db.schema.dropTable('channels').execute();
}

/**
 * SQLite cannot drop a NOT NULL: the table is made again, as SQLite's documentation of ALTER TABLE
 * describes (new table, copy with the same rowids, which the search tables point at, drop, rename,
 * the table's own indexes and triggers again). Foreign keys are off meanwhile so that dropping the
 * old table cascades to nothing; they are checked before the commit.
 */
async function rebuildSqliteTable(db: Kysely<any>, table: string, change: (create: string) => string): Promise<void> {
  const rebuilt = `${table}_rebuilt`;
  const schema = await sql<{
    type: string;
    sql: string | null;
  }>`select type, sql from sqlite_master where tbl_name = ${table}`.execute(db);
  const create = schema.rows.find((row) => row.type === 'table')?.sql;
  if (!create) throw new Error(`No table ${table}`);
  const changed = change(create);
  if (changed === create) throw new Error(`The change to ${table} matched nothing`);
  const dependents = schema.rows
    .filter((row) => row.type !== 'table' && row.sql !== null)
    .map((row) => row.sql as string);
  const columns = (await sql<{ name: string }>`select name from pragma_table_info(${table})`.execute(db)).rows
    .map((row) => `"${row.name}"`)
    .join(', ');

  await sql`pragma foreign_keys = off`.execute(db);
  await sql`pragma legacy_alter_table = on`.execute(db);
  try {
    await sql`begin`.execute(db);
    await sql.raw(changed.replace(`CREATE TABLE "${table}"`, `CREATE TABLE "${rebuilt}"`)).execute(db);
    await sql.raw(`insert into "${rebuilt}" (rowid, ${columns}) select rowid, ${columns} from "${table}"`).execute(db);
    await sql.raw(`drop table "${table}"`).execute(db);
    await sql.raw(`alter table "${rebuilt}" rename to "${table}"`).execute(db);
    for (const statement of dependents) await sql.raw(statement).execute(db);
    const broken = await sql`pragma foreign_key_check`.execute(db);
    if (broken.rows.length > 0) throw new Error(`Rebuilding ${table} broke ${broken.rows.length} foreign keys`);
    await sql`commit`.execute(db);
  } catch (error) {
    await sql`rollback`.execute(db);
    throw error;
  } finally {
    await sql`pragma legacy_alter_table = off`.execute(db);
    await sql`pragma foreign_keys = on`.execute(db);
  }
}
