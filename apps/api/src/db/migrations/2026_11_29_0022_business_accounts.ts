import type { Kysely } from 'kysely';

/** A WhatsApp channel's WhatsApp Business Account, whose message templates the API lists and checks sends against. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('channels').addColumn('business_account_id', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('channels').dropColumn('business_account_id').execute();
}
