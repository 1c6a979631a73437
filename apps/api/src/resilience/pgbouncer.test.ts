import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { ACTIVE_DIALECTS, startTestServer } from '../testing/harness.js';

/** The PgBouncer project's check that its servers do reach Postgres through PgBouncer, pooled per transaction. */
describe.runIf(ACTIVE_DIALECTS.includes('postgres'))('the HTTP suite through PgBouncer [postgres]', () => {
  it('runs its servers on connections that PgBouncer pools per transaction', async () => {
    const server = await startTestServer('postgres');
    const consoleUrl = new URL(server.databaseUrl);
    consoleUrl.pathname = '/pgbouncer';
    const admin = new pg.Client({ connectionString: consoleUrl.toString() });
    try {
      expect(new URL(server.databaseUrl).port).toBe(new URL(inject('pgbouncerUrl')).port);
      expect((await server.request('GET', '/contacts')).status).toBe(200);
      await admin.connect();
      const config = await admin.query<{ key: string; value: string }>('SHOW CONFIG');
      expect(config.rows.find((row) => row.key === 'pool_mode')?.value).toBe('transaction');
      const clients = await admin.query<{ database: string }>('SHOW CLIENTS');
      expect(clients.rows.map((row) => row.database)).toContain(new URL(server.databaseUrl).pathname.slice(1));
    } finally {
      await admin.end().catch(() => {});
      await server.close();
    }
  });
});
