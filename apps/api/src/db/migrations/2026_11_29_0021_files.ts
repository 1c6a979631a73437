import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../dialect.js';

/**
 * Files (CONTRACT: Files and media): their records, and the bytes of those kept in the database (the
 * default store) as chunks, so that a file streams in and out a chunk at a time. Chunks are written
 * before their file's record exists: the worker deletes those no record ever claimed.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('files')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('filename', 'text')
    .addColumn('mime_type', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    // Where its bytes are: `database` (file_chunks) or `filesystem` (CONVO_FILES_DIR).
    .addColumn('store', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('files_pk', ['account_id', 'id'])
    .execute();
  await db.schema
    .createTable('file_chunks')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('file_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('data', isPostgres(db) ? sql`bytea` : 'blob', (c) => c.notNull())
    .addPrimaryKeyConstraint('file_chunks_pk', ['account_id', 'file_id', 'seq'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('file_chunks').execute();
  await db.schema.dropTable('files').execute();
}
