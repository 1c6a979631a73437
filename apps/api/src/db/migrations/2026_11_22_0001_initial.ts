import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../dialect.js';

// Runs on SQLite and Postgres alike: portable types only (text, integer, bigint).
// Every tenant table's primary key starts with account_id, and foreign keys between tenant
// tables include it, so the schema can later be distributed by account.

export async function up(db: Kysely<any>): Promise<void> {
  // Tag names sort in code-point order: SQLite's default (BINARY) does; Postgres needs "C".
  const codePointText = isPostgres(db) ? sql`text collate "C"` : sql`text`;
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('rate_limit_rpm', 'integer')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('redacted', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull())
    .addColumn('signing_secret', 'text')
    .addColumn('last_used_at', 'text')
    .addColumn('revoked_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('api_keys_pk', ['account_id', 'id'])
    .execute();
  await db.schema.createIndex('api_keys_hash_idx').on('api_keys').column('key_hash').unique().execute();
  await db.schema.createIndex('api_keys_id_idx').on('api_keys').column('id').unique().execute();

  await db.schema
    .createTable('contacts')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('name_search', 'text')
    .addColumn('phone', 'text', (c) => c.notNull())
    .addColumn('phone_digits', 'text', (c) => c.notNull())
    .addColumn('email', 'text')
    .addColumn('email_search', 'text')
    .addColumn('tags', 'text', (c) => c.notNull())
    .addColumn('attributes', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('contacts_pk', ['account_id', 'id'])
    .addUniqueConstraint('contacts_phone_unique', ['account_id', 'phone'])
    .execute();
  await db.schema
    .createIndex('contacts_created_idx')
    .on('contacts')
    .columns(['account_id', 'created_at', 'id'])
    .execute();

  await db.schema
    .createTable('contact_tags')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('contact_id', 'text', (c) => c.notNull())
    .addColumn('tag', codePointText, (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('contact_tags_pk', ['account_id', 'contact_id', 'tag'])
    .addForeignKeyConstraint(
      'contact_tags_contact_fk',
      ['account_id', 'contact_id'],
      'contacts',
      ['account_id', 'id'],
      (fk) => fk.onDelete('cascade'),
    )
    .execute();
  await db.schema
    .createIndex('contact_tags_tag_idx')
    .on('contact_tags')
    .columns(['account_id', 'tag', 'contact_id'])
    .execute();

  await db.schema
    .createTable('conversations')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('contact_id', 'text', (c) => c.notNull())
    .addColumn('platform', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('message_count', 'integer', (c) => c.notNull())
    .addColumn('last_message_content', 'text')
    .addColumn('last_message_at', 'text')
    .addColumn('last_activity_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('conversations_pk', ['account_id', 'id'])
    .addForeignKeyConstraint(
      'conversations_contact_fk',
      ['account_id', 'contact_id'],
      'contacts',
      ['account_id', 'id'],
      (fk) => fk.onDelete('cascade'),
    )
    .execute();
  // One index per filter combination the list offers, each ending in the sort key.
  await db.schema
    .createIndex('conversations_activity_idx')
    .on('conversations')
    .columns(['account_id', 'last_activity_at', 'id'])
    .execute();
  await db.schema
    .createIndex('conversations_status_idx')
    .on('conversations')
    .columns(['account_id', 'status', 'last_activity_at', 'id'])
    .execute();
  await db.schema
    .createIndex('conversations_platform_idx')
    .on('conversations')
    .columns(['account_id', 'platform', 'last_activity_at', 'id'])
    .execute();
  await db.schema
    .createIndex('conversations_status_platform_idx')
    .on('conversations')
    .columns(['account_id', 'status', 'platform', 'last_activity_at', 'id'])
    .execute();
  await db.schema
    .createIndex('conversations_contact_idx')
    .on('conversations')
    .columns(['account_id', 'contact_id', 'platform'])
    .execute();

  await db.schema
    .createTable('messages')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('conversation_id', 'text', (c) => c.notNull())
    .addColumn('direction', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('messages_pk', ['account_id', 'id'])
    .addForeignKeyConstraint(
      'messages_conversation_fk',
      ['account_id', 'conversation_id'],
      'conversations',
      ['account_id', 'id'],
      (fk) => fk.onDelete('cascade'),
    )
    .execute();
  await db.schema
    .createIndex('messages_conversation_idx')
    .on('messages')
    .columns(['account_id', 'conversation_id', 'created_at', 'id'])
    .execute();

  await db.schema
    .createTable('orders')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('contact_id', 'text')
    .addColumn('number', 'text', (c) => c.notNull())
    .addColumn('number_value', 'bigint')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('total_amount', 'bigint', (c) => c.notNull())
    .addColumn('items', 'text', (c) => c.notNull())
    .addColumn('placed_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('orders_pk', ['account_id', 'id'])
    .addUniqueConstraint('orders_number_unique', ['account_id', 'number'])
    // No cascade: deleting a contact keeps its orders (the service sets contact_id to null first).
    .addForeignKeyConstraint('orders_contact_fk', ['account_id', 'contact_id'], 'contacts', ['account_id', 'id'])
    .execute();
  await db.schema.createIndex('orders_placed_idx').on('orders').columns(['account_id', 'placed_at', 'id']).execute();
  await db.schema
    .createIndex('orders_contact_idx')
    .on('orders')
    .columns(['account_id', 'contact_id', 'placed_at', 'id'])
    .execute();
  await db.schema
    .createIndex('orders_status_idx')
    .on('orders')
    .columns(['account_id', 'status', 'placed_at', 'id'])
    .execute();
  await db.schema.createIndex('orders_number_value_idx').on('orders').columns(['account_id', 'number_value']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['orders', 'messages', 'conversations', 'contact_tags', 'contacts', 'api_keys', 'accounts']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
