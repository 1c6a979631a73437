import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { accountsService } from '../services/accounts.js';
import { ensureBuilt } from '../testing/built-bin.js';
import { type TestDatabase, createTestDatabase } from '../testing/databases.js';
import { ACTIVE_DIALECTS } from '../testing/harness.js';
import { type Answer, type ServerProcess, describeAnswer, send, startServer, stopAll, waitFor } from './processes.js';

/** kill -9 of a server mid-stream loses no write it acknowledged: a 201 means the row is durable. */

const LANES = 6;
const KILL_AFTER = 60;

for (const dialect of ACTIVE_DIALECTS) {
  describe(`kill -9 of a server process [${dialect}]`, () => {
    let testDb: TestDatabase | undefined;
    let key = '';

    beforeAll(async () => {
      ensureBuilt();
      testDb = await createTestDatabase(dialect);
      const database = openDatabase(testDb.url);
      try {
        await migrateToLatest(database.db);
        const account = await accountsService.createAccount(
          { database },
          {
            name: 'Crash',
            plan: 'enterprise',
            rateLimitRpm: 1_000_000,
          },
        );
        key = (await accountsService.createKey({ database }, { accountId: account.id, type: 'full_access' })).key;
      } finally {
        await database.destroy();
      }
    });
    afterAll(async () => {
      await stopAll();
      await testDb?.drop();
    });

    it('loses no acknowledged write', async () => {
      const url = (testDb as TestDatabase).url;
      const first: ServerProcess = await startServer({ DATABASE_URL: url }, `crash-${dialect}-1`);
      const acknowledged: { id: string; phone: string }[] = [];
      const failures: Answer[] = [];
      let counter = 0;
      // LANES clients, each sending POST /contacts back to back until the server is gone.
      const lane = async () => {
        for (;;) {
          const phone = `+1415${String(5_000_000 + counter++).padStart(7, '0')}`;
          const answer = await send(first.origin, 'POST', '/v1/contacts', {
            key,
            body: { phone, name: `Crash ${counter}` },
            timeoutMs: 10_000,
          });
          if (answer.status === 201) {
            expect(answer.body?.phone, describeAnswer(answer)).toBe(phone);
            acknowledged.push({ id: answer.body.id, phone });
          } else {
            failures.push(answer);
            if (answer.error) return;
          }
        }
      };
      const lanes = Array.from({ length: LANES }, lane);

      await waitFor(() => acknowledged.length >= KILL_AFTER, `${KILL_AFTER} acknowledged contacts`, 20_000, 5);
      expect(await first.kill('SIGKILL')).toBe('SIGKILL');
      await Promise.all(lanes);

      // Every lane stopped on a transport error, after the kill; nothing else went wrong.
      for (const failure of failures) expect(failure.error, describeAnswer(failure)).toBeDefined();
      expect(failures).toHaveLength(LANES);
      const acknowledgedCount = acknowledged.length;
      expect(acknowledgedCount).toBeGreaterThanOrEqual(KILL_AFTER);

      const second = await startServer({ DATABASE_URL: url }, `crash-${dialect}-2`);
      const missing: string[] = [];
      for (let i = 0; i < acknowledged.length; i += 20) {
        const answers = await Promise.all(
          acknowledged.slice(i, i + 20).map((c) => send(second.origin, 'GET', `/v1/contacts/${c.id}`, { key })),
        );
        for (const [j, answer] of answers.entries()) {
          const contact = acknowledged[i + j] as { id: string; phone: string };
          if (answer.status !== 200 || answer.body?.phone !== contact.phone)
            missing.push(`${contact.id}: ${describeAnswer(answer)}`);
        }
      }
      expect(missing, `${missing.length} of ${acknowledgedCount} acknowledged contacts are missing`).toEqual([]);

      // The list agrees: at least every acknowledged contact (unacknowledged ones may have landed too).
      const list = await send(second.origin, 'GET', '/v1/contacts?limit=1', { key });
      expect(list.status, describeAnswer(list)).toBe(200);
      expect(list.body.total).toBeGreaterThanOrEqual(acknowledgedCount);
      expect(list.body.total).toBeLessThanOrEqual(acknowledgedCount + LANES);
    });
  });
}
