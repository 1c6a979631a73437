import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../db/database.js';
import type { TestDatabase } from '../testing/databases.js';
import { ACTIVE_DIALECTS } from '../testing/harness.js';
import { contactRow, conversationRow } from '../testing/rows.js';
import { createSearchFixture } from '../testing/search-fixture.js';
import { hashKey } from '../keys.js';
import { accountsService } from '../services/accounts.js';
import { type ConversationFilter, conversationsRepository } from './conversations.js';
import { KeyCheck } from './key-check.js';
import { TenantScope } from './tenant.js';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

interface PreparedStatement {
  statement: string;
  generic_plans: number;
  custom_plans: number;
}

/**
 * Postgres plans a named statement anew at every execution while its generic plan looks dearer
 * than the plans made for the values; for the search statements that planning took longer than
 * running them. The values their plans do not depend on are bound out of the planner's sight
 * (planAlike), so from the sixth execution on a connection the generic plan is kept; a fragment
 * too short for the trigram indexes is sent unnamed and planned for its value every time.
 * pg_prepared_statements counts both kinds of plans per statement of the session.
 */
describe.skipIf(!ACTIVE_DIALECTS.includes('postgres'))('search statements on Postgres', () => {
  let target: TestDatabase;
  let database: DatabaseHandle;
  let accountId: string;

  /** Conversations of contacts that match none of the searches below, older than the fixture's. */
  const OTHERS = 4000;

  beforeAll(async () => {
    ({ target, database, accountId } = await createSearchFixture('postgres'));
    // Enough rows that reading them all is not what the planner would pick anyway: a plan that
    // reads every conversation is a wrong plan here, not a small table's cheapest one.
    const at = (i: number) => new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString();
    for (let from = 0; from < OTHERS; from += 500) {
      const indexes = Array.from({ length: 500 }, (_, k) => from + k);
      await database.db.insertInto('contacts').values(indexes.map((i) => contactRow(accountId, { id: `ct_other_${i}`, name: `Zed ${i}`, phone: `+4477${1_000_000 + i}`, at: at(i) }))).execute();
      await database.db.insertInto('conversations').values(indexes.map((i) => conversationRow(accountId, { id: `conv_other_${i}`, contact_id: `ct_other_${i}`, at: at(i) }))).execute();
    }
    await sql`analyze`.execute(database.db);
  });

  afterAll(async () => {
    await database?.destroy();
    await target?.drop();
  });

  /** Runs the search `times` times on one connection; what that connection has prepared, and the totals. */
  async function searchOnOneConnection(filter: ConversationFilter, times: number): Promise<{ prepared: PreparedStatement[]; totals: number[] }> {
    return database.db.transaction().execute(async (tx) => {
      const totals: number[] = [];
      for (let i = 0; i < times; i++) totals.push((await conversationsRepository.list(new TenantScope(tx, accountId), filter, { limit: 20, offset: 0 })).total);
      const { rows } = await sql<PreparedStatement>`select statement, generic_plans, custom_plans from pg_prepared_statements`.execute(tx);
      return { prepared: rows.map((row) => ({ ...row, generic_plans: Number(row.generic_plans), custom_plans: Number(row.custom_plans) })), totals };
    });
  }

  it('keep the generic plan of a three-character search (the kept count, the walk and the rows in one statement)', async () => {
    const { prepared, totals } = await searchOnOneConnection({ search: 'tin' }, 8);
    expect(totals).toEqual(Array(8).fill(150));
    const search = prepared.filter((p) => p.statement.includes('conversation_name_trigrams'));
    expect(search).toHaveLength(1);
    expect(search[0]).toMatchObject({ custom_plans: 5, generic_plans: 3 });
  });

  it('keep the generic plan of a search by phone digits (the contacts, their conversations and the rows in one statement)', async () => {
    const { prepared, totals } = await searchOnOneConnection({ search: '5551000012', searchDigits: '5551000012' }, 8);
    expect(totals).toEqual(Array(8).fill(1));
    const searches = prepared.filter((p) => p.statement.includes('"matched"') || p.statement.includes('any((select'));
    expect(searches).toHaveLength(1);
    expect(searches[0]).toMatchObject({ custom_plans: 5, generic_plans: 3 });
  });

  /**
   * The plans of the search statements run on one connection, as auto_explain sends them (EXPLAIN
   * ANALYZE of each execution, as notices), after `times` searches: the generic plan by then.
   */
  async function plansOnOneConnection(filter: ConversationFilter, times: number): Promise<{ query: string; plan: PlanNode }[]> {
    const plans: { query: string; plan: PlanNode }[] = [];
    const listen = (client: { on(event: 'notice', listener: (notice: { message?: string }) => void): void }) =>
      client.on('notice', (notice) => {
        const json = notice.message?.slice(notice.message.indexOf('{'));
        if (!json?.startsWith('{')) return;
        const explained = JSON.parse(json) as { 'Query Text': string; Plan: PlanNode };
        plans.push({ query: explained['Query Text'], plan: explained.Plan });
      });
    const pool = database.pgPool as NonNullable<DatabaseHandle['pgPool']>;
    pool.on('acquire', listen as never);
    try {
      await database.db.transaction().execute(async (tx) => {
        await sql`load 'auto_explain'`.execute(tx);
        for (const setting of ['auto_explain.log_min_duration = 0', 'auto_explain.log_analyze = on', 'auto_explain.log_format = json', 'auto_explain.log_level = notice']) {
          await sql.raw(`set local ${setting}`).execute(tx);
        }
        for (let i = 0; i < times; i++) await conversationsRepository.list(new TenantScope(tx, accountId), filter, { limit: 20, offset: 0 });
      });
    } finally {
      pool.off('acquire', listen as never);
    }
    return plans;
  }

  /** Rows of `conversations` a plan read: each scan's rows kept and removed, times its loops. */
  function conversationsRead(node: PlanNode): number {
    const own = node['Relation Name'] === 'conversations'
      ? ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * (node['Actual Loops'] ?? 1)
      : 0;
    return own + (node.Plans ?? []).reduce((sum, child) => sum + conversationsRead(child), 0);
  }

  // The page's 20 rows must be found by primary key whatever the planner guesses of the walk: a
  // guess of a third of all rows (`strpos(…) > 0`) once made the generic plan join the walk to a
  // scan of every conversation (135 ms at 200k conversations; here it would read 4,200 rows).
  // (How the contacts are found is not checked: at 4,200 contacts the generic plan of the phone
  // search reads them all rather than its trigram indexes, which it uses at 50,000.)
  for (const [what, filter, read] of [
    // The walk (the 50 newer conversations of other contacts, then the page's 20), then the page's 20 by primary key.
    ['a three-character search', { search: 'tin' }, 50 + 20 + 20],
    // The phone's contact's one conversation (conversations_contact_idx), then it by primary key.
    ['a search by phone digits', { search: '5551000012', searchDigits: '5551000012' }, 1 + 1],
  ] as const) {
    it(`read only the page's rows under the generic plan of ${what}`, async () => {
      const plans = (await plansOnOneConnection(filter, 8)).filter(({ query }) => query.includes('"matched"') || query.includes('conversation_name_trigrams'));
      expect(plans).toHaveLength(8);
      const last = plans.at(-1) as { plan: PlanNode };
      expect(conversationsRead(last.plan)).toBe(read);
    });
  }

  it('plan a fragment too short for the trigram indexes for its value, every time', async () => {
    const { prepared, totals } = await searchOnOneConnection({ search: 'ti' }, 8);
    expect(totals).toEqual(Array(8).fill(150));
    // No named statement binds a LIKE pattern in the planner's sight (the connection may hold the
    // other tests' statements, whose patterns are out of it): each search statement went unnamed.
    expect(prepared.filter((p) => /like \$\d/.test(p.statement))).toEqual([]);
  });

  // A read operation's first statement carries its key check (key-check.ts): wrapped, the search
  // must still settle on its generic plan, return the same page, and nothing for a revoked key.
  it('keep the generic plan of a search with the key check around it; a row confirms the check, a revoked key gets none', async () => {
    const created = await accountsService.createKey(database, { accountId, type: 'read_only' });
    const checkOf = () => new KeyCheck(created.id, hashKey(created.key));
    const page = { limit: 20, offset: 0 };
    await database.db.transaction().execute(async (tx) => {
      const checks: KeyCheck[] = [];
      const ids: string[][] = [];
      for (let i = 0; i < 8; i++) {
        const check = checkOf();
        checks.push(check);
        const found = await conversationsRepository.list(new TenantScope(tx, accountId, check), { search: 'tin' }, page);
        expect(found.total).toBe(150);
        ids.push(found.rows.map((row) => row.id));
      }
      expect(checks.map((check) => check.confirmed)).toEqual(Array(8).fill(true));
      // The same page, in the same order, as without the check.
      const unchecked = await conversationsRepository.list(new TenantScope(tx, accountId), { search: 'tin' }, page);
      expect(ids).toEqual(Array(8).fill(unchecked.rows.map((row) => row.id)));
      const { rows } = await sql<PreparedStatement>`select statement, generic_plans, custom_plans from pg_prepared_statements where statement like '%convo_key_checked%'`.execute(tx);
      expect(rows).toHaveLength(1);
      expect({ custom_plans: Number(rows[0]?.custom_plans), generic_plans: Number(rows[0]?.generic_plans) }).toEqual({ custom_plans: 5, generic_plans: 3 });
    });

    await accountsService.revokeKey(database, created.id);
    const check = checkOf();
    const found = await conversationsRepository.list(new TenantScope(database.db, accountId, check), { search: 'tin' }, page);
    expect(found.rows).toEqual([]);
    expect(check.confirmed).toBe(false);
  });
});
