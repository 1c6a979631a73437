import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { accountsService } from '../services/accounts.js';
import { type TestDatabase, createTestDatabase } from '../testing/databases.js';
import { ACTIVE_DIALECTS } from '../testing/harness.js';
import { TenantScope } from './tenant.js';
import { takeStatement, updateIfUnchangedStatement } from './webhooks.js';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/**
 * How a plan reads webhook_deliveries: the index of each scan of it (a bitmap scan's by its index scan), or the node
 * type.
 */
function deliveryReads(explained: { 'QUERY PLAN': { Plan: PlanNode }[] }[]): string[] {
  const reads: string[] = [];
  const visit = (node: PlanNode) => {
    if (node['Relation Name'] === 'webhook_deliveries' && node['Node Type'] !== 'ModifyTable') {
      const index =
        node['Index Name'] ?? node.Plans?.find((child) => child['Node Type'] === 'Bitmap Index Scan')?.['Index Name'];
      reads.push(index ?? node['Node Type']);
    }
    for (const child of node.Plans ?? []) visit(child);
  };
  for (const row of explained) for (const plan of row['QUERY PLAN']) visit(plan.Plan);
  return reads;
}

describe.runIf(ACTIVE_DIALECTS.includes('postgres'))('webhook delivery plans on Postgres', () => {
  let target: TestDatabase;
  let database: DatabaseHandle;
  let scope: TenantScope;
  const at = new Date().toISOString();

  beforeAll(async () => {
    target = await createTestDatabase('postgres');
    database = openDatabase(target.url);
    await migrateToLatest(database.db);
    const { id } = await accountsService.createAccount({ database }, { name: 'Plans', plan: 'free' });
    scope = new TenantScope(database.db, id, database.capabilities);
    await sql`alter table webhook_deliveries set (autovacuum_enabled = false)`.execute(database.db);
    await sql`insert into webhook_endpoints (account_id, id, url, events, description, status, created_at, updated_at)
      values (${id}, 'we_plans', 'https://example.com/hook', '["*"]', null, 'enabled', ${at}, ${at})`.execute(
      database.db,
    );
  });
  afterAll(async () => {
    await database.destroy();
    await target.drop();
  });

  const insertDeliveries = (from: number, count: number, status: 'pending' | 'succeeded') =>
    database.db
      .insertInto('webhook_deliveries')
      .values(
        Array.from({ length: count }, (_, i) => ({
          account_id: scope.accountId,
          id: `wd_${from + i}`,
          endpoint_id: 'we_plans',
          event_id: `evt_${from + i}`,
          event_type: 'order.placed' as const,
          status,
          attempts: '[]',
          next_attempt_at: status === 'pending' ? at : null,
          created_at: at,
          updated_at: at,
        })),
      )
      .execute();

  const plans = async () => [
    ...deliveryReads((await takeStatement(scope, ['wd_1', 'wd_2'], { now: at, until: at }).explain('json')) as never),
    ...deliveryReads(
      (await updateIfUnchangedStatement(scope, [
        {
          id: 'wd_1',
          expected_next_attempt_at: at,
          attempts: '[]',
          status: 'succeeded',
          next_attempt_at: null,
          updated_at: at,
        },
        { id: 'wd_2', expected_next_attempt_at: at, status: 'failed', next_attempt_at: null, updated_at: at },
      ]).explain('json')) as never,
    ),
  ];

  it('finds the deliveries a batch takes and records by their key, whether statistics are missing or older than a burst', async () => {
    await insertDeliveries(0, 5_000, 'pending');
    expect(await plans()).toEqual(['webhook_deliveries_pk', 'webhook_deliveries_pk']);

    // Statistics of an account whose deliveries were all done, then a burst of pending ones.
    await database.db.deleteFrom('webhook_deliveries').execute();
    await insertDeliveries(0, 300, 'succeeded');
    await sql`analyze webhook_deliveries`.execute(database.db);
    await database.db.deleteFrom('webhook_deliveries').execute();
    await insertDeliveries(0, 5_000, 'pending');
    expect(await plans()).toEqual(['webhook_deliveries_pk', 'webhook_deliveries_pk']);
  });
});
