import { CompiledQuery, SqliteQueryCompiler, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DatabaseHandle } from '../../db/database.js';
import type { TestDatabase } from '../../testing/databases.js';
import { createSearchFixture } from '../../testing/search-fixture.js';
import type { ConversationFilter } from '../conversations.js';
import { type Executor, TenantScope } from '../tenant.js';

/**
 * SQLite's plans for the conversation list under the statistics its sampled ANALYZE wrote for the
 * benchmark's data set, which overstate how many rows an account and a contact hold: the queries name
 * their order of loops (CROSS JOIN, INDEXED BY, `+column`), so each starts where it should whatever
 * the statistics say.
 */
const SAMPLED_STATISTICS: [string, string, string][] = [
  ['conversations', 'conversations_activity_idx', '200000 1001 1 1 1'],
  ['conversations', 'conversations_contact_idx', '200000 1001 1001 501'],
  ['conversations', 'conversations_status_idx', '200000 1001 1001 1 1'],
  ['conversations', 'conversations_platform_idx', '200000 1001 1001 1 1'],
  ['conversations', 'conversations_status_platform_idx', '200000 1001 1001 1001 1 1'],
  ['conversations', 'sqlite_autoindex_conversations_1', '200000 1001 1'],
  ['conversation_name_trigrams', 'sqlite_autoindex_conversation_name_trigrams_1', '6654 6654 1'],
  ['contacts', 'contacts_created_idx', '50000 1001 1 1'],
  ['contacts', 'sqlite_autoindex_contacts_1', '50000 1001 1'],
];

describe('conversation search plans on SQLite', () => {
  let target: TestDatabase;
  let database: DatabaseHandle;
  let accountId: string;
  const captured: CompiledQuery[] = [];
  let capturing = false;

  beforeAll(async () => {
    ({ target, database, accountId } = await createSearchFixture('sqlite'));
    await sql`delete from sqlite_stat1`.execute(database.db);
    for (const [table, index, stat] of SAMPLED_STATISTICS)
      await sql`insert into sqlite_stat1 (tbl, idx, stat) values (${table}, ${index}, ${stat})`.execute(database.db);
    // Loads the statistics into the planner.
    await sql`analyze sqlite_schema`.execute(database.db);
  });

  afterAll(async () => {
    await database?.destroy();
    await target?.drop();
  });

  /** The plan of every query a list call runs, in order. */
  async function plansOf(filter: ConversationFilter): Promise<{ sql: string; plan: string }[]> {
    // The hot statements are compiled once per process (prepared, preparedByShape), and the plugin
    // below sees a statement when it is compiled: a fresh copy of the repository's modules compiles
    // every statement of this call again, whichever test compiled it first.
    vi.resetModules();
    const { conversationsRepository } = await import('../conversations.js');
    captured.length = 0;
    capturing = true;
    const db = database.db.withPlugin({
      transformQuery: (args) => {
        // SqliteDialect's own compiler, as Kysely's SQLite dialect creates it.
        if (capturing) captured.push(new SqliteQueryCompiler().compileQuery(args.node, args.queryId));
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    const { total } = await conversationsRepository.list(
      new TenantScope(db as Executor, accountId, database.capabilities),
      filter,
      {
        limit: 20,
        offset: 0,
      },
    );
    capturing = false;
    expect(total).toBeGreaterThan(0);
    // A subquery built apart is transformed apart too: keep the statements that ran.
    const statements = captured.filter(
      (query) => !captured.some((other) => other !== query && other.sql.includes(query.sql)),
    );
    const plans = [];
    for (const query of statements) {
      const rows = await database.db.executeQuery<{ detail: string }>(
        CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]),
      );
      plans.push({ sql: query.sql, plan: rows.rows.map((row) => row.detail).join('\n') });
    }
    return plans;
  }

  it('a phone number: its contact from a range of phone suffixes (and the FTS rowids for names), its conversations from the contact index, the page by primary key', async () => {
    const plans = await plansOf({ search: '1000007', searchDigits: '1000007' });
    const [summary, page] = plans;
    expect(plans).toHaveLength(2);
    expect(summary?.plan).toMatch(/SEARCH contact_phone_suffixes USING PRIMARY KEY \(suffix>\? AND suffix<\?\)/);
    expect(summary?.plan).toMatch(/SCAN contacts_search VIRTUAL TABLE INDEX/);
    expect(summary?.plan).toMatch(/SEARCH contacts USING INTEGER PRIMARY KEY \(rowid=\?\)/);
    expect(summary?.plan).not.toMatch(/contacts_created_idx/);
    expect(page?.plan).toMatch(
      /SEARCH conversations USING (COVERING )?INDEX conversations_contact_idx \(account_id=\? AND contact_id=\?\)/,
    );
    expect(page?.plan).toMatch(
      /SEARCH conversations USING INDEX sqlite_autoindex_conversations_1 \(account_id=\? AND id=\?\)/,
    );
    expect(page?.plan).not.toMatch(/conversations_activity_idx/);
  });

  it('a common name (the probe plan): the contacts from the FTS rowids, their conversations from the contact index, sorted, then the rows by primary key', async () => {
    const plans = await plansOf({ search: 'tinl' });
    const [summary, page] = plans;
    expect(plans).toHaveLength(2);
    expect(summary?.plan).toMatch(/SEARCH contacts USING INTEGER PRIMARY KEY \(rowid=\?\)/);
    expect(summary?.plan).not.toMatch(/conversations/);
    expect(page?.plan).toMatch(
      /SEARCH conversations USING (COVERING )?INDEX conversations_contact_idx \(account_id=\? AND contact_id=\?\)/,
    );
    expect(page?.plan).toMatch(
      /SEARCH conversations USING INDEX sqlite_autoindex_conversations_1 \(account_id=\? AND id=\?\)/,
    );
    expect(page?.plan).not.toMatch(/conversations_activity_idx/);
  });

  it('three characters (the trigram plan): the counts from the trigram row and the counters, then the page walked along the activity index, reading no contact but the page', async () => {
    const plans = await plansOf({ search: 'tin' });
    const [counts, page] = plans;
    expect(plans).toHaveLength(2);
    expect(counts?.plan).toMatch(
      /SEARCH conversation_name_trigrams USING (COVERING )?INDEX sqlite_autoindex_conversation_name_trigrams_1 \(account_id=\? AND trigram=\?\)/,
    );
    expect(counts?.plan).not.toMatch(/contacts|SEARCH conversations /);
    expect(page?.plan).toMatch(
      /SEARCH conversations USING COVERING INDEX conversations_activity_idx \(account_id=\?\)/,
    );
    expect(page?.plan).toMatch(
      /SEARCH conversations USING INDEX sqlite_autoindex_conversations_1 \(account_id=\? AND id=\?\)/,
    );
    expect(page?.plan).toMatch(/SEARCH contacts USING INDEX sqlite_autoindex_contacts_1 \(account_id=\? AND id=\?\)/);
    expect(page?.plan).not.toMatch(/contacts_search|conversations_contact_idx/);
  });

  it('a status (the counters plan): the total from the counters, the page ids from the status index alone', async () => {
    const plans = await plansOf({ status: 'active' });
    const [count, page] = plans;
    expect(plans).toHaveLength(2);
    expect(count?.plan).toMatch(/SEARCH conversation_counts/);
    expect(page?.sql).not.toMatch(/limit \?/);
    expect(page?.plan).toMatch(
      /SEARCH conversations USING COVERING INDEX conversations_status_idx \(account_id=\? AND status=\?\)/,
    );
  });
});
