import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../db/database.js';
import type { TestDatabase } from '../testing/databases.js';
import { ACTIVE_DIALECTS } from '../testing/harness.js';
import { createSearchFixture } from '../testing/search-fixture.js';
import { type ConversationFilter, conversationsRepository } from './conversations.js';
import { TenantScope } from './tenant.js';

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

  beforeAll(async () => {
    ({ target, database, accountId } = await createSearchFixture('postgres'));
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

  it('keep the generic plans of a search by phone digits (the contacts, then the rows by id)', async () => {
    const { prepared, totals } = await searchOnOneConnection({ search: '5551000012', searchDigits: '5551000012' }, 8);
    expect(totals).toEqual(Array(8).fill(1));
    const searches = prepared.filter((p) => p.statement.includes('"matched"') || p.statement.includes('any((select'));
    expect(searches).toHaveLength(2);
    for (const statement of searches) expect(statement).toMatchObject({ custom_plans: 5, generic_plans: 3 });
  });

  it('plan a fragment too short for the trigram indexes for its value, every time', async () => {
    const { prepared, totals } = await searchOnOneConnection({ search: 'ti' }, 8);
    expect(totals).toEqual(Array(8).fill(150));
    // No named statement binds a LIKE pattern in the planner's sight (the connection may hold the
    // other tests' statements, whose patterns are out of it): each search statement went unnamed.
    expect(prepared.filter((p) => /like \$\d/.test(p.statement))).toEqual([]);
  });
});
