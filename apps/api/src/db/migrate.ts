import { sql, type Migration, type MigrationProvider, type MigrationResultSet, Migrator } from 'kysely';
import { type AnyKysely, isPostgres } from './dialect.js';
import * as initial from './migrations/2026_11_22_0001_initial.js';
import * as eventsWebhooksWorkflows from './migrations/2026_11_22_0002_events_webhooks_workflows.js';
import * as rateLimitsIdempotency from './migrations/2026_11_22_0003_rate_limits_idempotency.js';
import * as searchIndexes from './migrations/2026_11_22_0004_search_indexes.js';
import * as unloggedRateLimits from './migrations/2026_11_22_0005_unlogged_rate_limits.js';
import * as conversationCounts from './migrations/2026_11_22_0006_conversation_counts.js';
import * as contactConversationCounts from './migrations/2026_11_22_0007_contact_conversation_counts.js';
import * as conversationNameTrigrams from './migrations/2026_11_22_0008_conversation_name_trigrams.js';
import * as phoneDigitSuffixes from './migrations/2026_11_23_0009_phone_digit_suffixes.js';
import * as orderNumberKeys from './migrations/2026_11_25_0010_order_number_keys.js';
import * as jobAccountIndexes from './migrations/2026_11_25_0011_job_account_indexes.js';
import * as jobLanes from './migrations/2026_11_25_0012_job_lanes.js';
import * as channels from './migrations/2026_11_25_0013_channels.js';
import * as people from './migrations/2026_11_26_0014_people.js';
import * as workflowChanges from './migrations/2026_11_26_0015_workflow_changes.js';
import * as eventPositions from './migrations/2026_11_26_0016_event_positions.js';
import * as workflowTriggers from './migrations/2026_11_26_0017_workflow_triggers.js';
import * as contactTagCounts from './migrations/2026_11_28_0018_contact_tag_counts.js';
import * as keyRevokedBy from './migrations/2026_11_29_0019_key_revoked_by.js';
import * as requestLogs from './migrations/2026_11_29_0020_request_logs.js';
import * as files from './migrations/2026_11_29_0021_files.js';
import * as businessAccounts from './migrations/2026_11_29_0022_business_accounts.js';

/** Migrations in date order. Imported statically so the bundled server carries them. */
const migrations: Record<string, Migration> = {
  '2026_11_22_0001_initial': initial,
  '2026_11_22_0002_events_webhooks_workflows': eventsWebhooksWorkflows,
  '2026_11_22_0003_rate_limits_idempotency': rateLimitsIdempotency,
  '2026_11_22_0004_search_indexes': searchIndexes,
  '2026_11_22_0005_unlogged_rate_limits': unloggedRateLimits,
  '2026_11_22_0006_conversation_counts': conversationCounts,
  '2026_11_22_0007_contact_conversation_counts': contactConversationCounts,
  '2026_11_22_0008_conversation_name_trigrams': conversationNameTrigrams,
  '2026_11_23_0009_phone_digit_suffixes': phoneDigitSuffixes,
  '2026_11_25_0010_order_number_keys': orderNumberKeys,
  '2026_11_25_0011_job_account_indexes': jobAccountIndexes,
  '2026_11_25_0012_job_lanes': jobLanes,
  '2026_11_25_0013_channels': channels,
  '2026_11_26_0014_people': people,
  '2026_11_26_0015_workflow_changes': workflowChanges,
  '2026_11_26_0016_event_positions': eventPositions,
  '2026_11_26_0017_workflow_triggers': workflowTriggers,
  '2026_11_28_0018_contact_tag_counts': contactTagCounts,
  '2026_11_29_0019_key_revoked_by': keyRevokedBy,
  '2026_11_29_0020_request_logs': requestLogs,
  '2026_11_29_0021_files': files,
  '2026_11_29_0022_business_accounts': businessAccounts,
};

/** The migrations, for the migrator (and tests that stop at one of them). */
export const migrationProvider: MigrationProvider = { getMigrations: async () => migrations };

export async function migrateToLatest(db: AnyKysely): Promise<MigrationResultSet> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const result = await migrator.migrateToLatest();
  if (result.error) throw result.error instanceof Error ? result.error : new Error(String(result.error));
  // New tables and indexes get the planner's statistics now rather than at the next open.
  if (result.results?.length && !isPostgres(db)) await sql`pragma optimize`.execute(db);
  return result;
}
