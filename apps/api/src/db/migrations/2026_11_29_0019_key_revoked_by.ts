import type { Kysely } from 'kysely';

/**
 * Who revoked a key (a console user's e-mail address, or `operator` for `convo-server keys revoke`): revoked keys
 * stay listed in the console with when and by whom, as Stripe keeps them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('revoked_by', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('revoked_by').execute();
}
