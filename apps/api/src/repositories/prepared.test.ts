import { describe, expect, it } from 'vitest';
import { ACTIVE_DIALECTS, startTestServer } from '../testing/harness.js';
import type { Dialect } from '../db/dialect.js';
import { prepared, preparedByShape } from './prepared.js';
import { type Executor, TenantScope } from './tenant.js';

for (const dialect of ACTIVE_DIALECTS) {
  describe(`prepared queries [${dialect}]`, () => {
    it('answer what the query built per call answers, for each call’s own values', async () => {
      const server = await startTestServer(dialect);
      try {
        const { db, capabilities: dialect } = server.database;
        const build = (executor: Executor, _dialect: Dialect, accountId: string, type: string) =>
          executor
            .selectFrom('api_keys')
            .select(['id', 'account_id', 'type'])
            .where('account_id', '=', accountId)
            .where('type', '=', type as 'full_access')
            .where('revoked_at', 'is', null)
            .orderBy('id');
        const keysOfType = prepared(build);
        for (const [accountId, type] of [
          [server.accountId, 'full_access'],
          [server.accountId, 'read_only'],
          [server.otherAccountId, 'full_access'],
          [server.accountId, 'nothing'],
        ] as const) {
          const expected = await build(db, dialect, accountId, type).execute();
          expect((await keysOfType({ db, dialect }, accountId, type)).rows).toEqual(expected);
        }
        // Inside a transaction too, and on a tenant scope (its executor and dialect).
        const inside = await db
          .transaction()
          .execute(async (trx) => (await keysOfType({ db: trx, dialect }, server.otherAccountId, 'full_access')).rows);
        expect(inside).toHaveLength(1);
        expect(
          (await keysOfType(new TenantScope(db, server.accountId, dialect), server.otherAccountId, 'full_access')).rows,
        ).toEqual(inside);
      } finally {
        await server.close();
      }
    });

    it('compile each shape once and bind each call’s own values (preparedByShape)', async () => {
      const server = await startTestServer(dialect);
      try {
        const { db, capabilities: dialect } = server.database;
        type Shape = { typed: boolean };
        type Values = { accountId: string; type: 'full_access' | 'read_only' | undefined };
        const build = (executor: Executor, _dialect: Dialect, shape: Shape, values: Values) => {
          let query = executor
            .selectFrom('api_keys')
            .select(['id', 'account_id', 'type'])
            .where('account_id', '=', values.accountId);
          if (shape.typed) query = query.where('type', '=', values.type as 'full_access');
          return query.orderBy('id');
        };
        const keys = preparedByShape(build);
        for (const [accountId, type] of [
          [server.accountId, 'full_access'],
          [server.accountId, undefined],
          [server.accountId, 'read_only'],
          [server.otherAccountId, undefined],
          [server.otherAccountId, 'full_access'],
        ] as const) {
          const shape = { typed: type !== undefined };
          const expected = await build(db, dialect, shape, { accountId, type }).execute();
          expect(await keys({ db, dialect }, shape, { accountId, type })).toEqual(expected);
        }
      } finally {
        await server.close();
      }
    });

    it('refuse a query that computes with an argument instead of using it as a value', async () => {
      const server = await startTestServer(dialect);
      try {
        const on = { db: server.database.db, dialect: server.database.capabilities };
        const wrong = prepared((executor: Executor, _dialect: Dialect, name: string) =>
          executor.selectFrom('accounts').select('id').where('name', '=', `${name}%`),
        );
        await expect(wrong(on, 'x')).rejects.toThrow(/computed with/);
        const unused = prepared((executor: Executor, _dialect: Dialect, _name: string) =>
          executor.selectFrom('accounts').select('id'),
        );
        await expect(unused(on, 'x')).rejects.toThrow(/not a parameter/);
        const wrongShape = preparedByShape(
          (executor: Executor, _dialect: Dialect, _shape: null, values: { name: string }) =>
            executor.selectFrom('accounts').select('id').where('name', '=', `${values.name}%`),
        );
        await expect(wrongShape(on, null, { name: 'x' })).rejects.toThrow(/computed with/);
        const unusedValue = preparedByShape(
          (executor: Executor, _dialect: Dialect, _shape: null, _values: { name: string }) =>
            executor.selectFrom('accounts').select('id'),
        );
        await expect(unusedValue(on, null, { name: 'x' })).rejects.toThrow(/not a parameter/);
      } finally {
        await server.close();
      }
    });
  });
}

describe('prepared reads on SQLite', () => {
  it('wait for an open transaction instead of reading what it has not committed', async () => {
    const server = await startTestServer('sqlite');
    try {
      const { db, capabilities: dialect } = server.database;
      const accountName = prepared((executor: Executor, _dialect: Dialect, id: string) =>
        executor.selectFrom('accounts').select('name').where('id', '=', id),
      );
      expect((await accountName({ db, dialect }, server.accountId)).rows).toEqual([{ name: 'Account A' }]);

      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let inserted!: () => void;
      const insertDone = new Promise<void>((resolve) => (inserted = resolve));
      const transaction = db
        .transaction()
        .execute(async (trx) => {
          await trx
            .insertInto('accounts')
            .values({
              id: 'acct_uncommitted',
              name: 'Uncommitted',
              plan: 'free',
              rate_limit_rpm: null,
              created_at: 'x',
              updated_at: 'x',
            })
            .execute();
          inserted();
          await held;
          throw new Error('roll back');
        })
        .catch(() => 'rolled back');
      await insertDone;
      let answered = false;
      const read = accountName({ db, dialect }, 'acct_uncommitted').then((result) => {
        answered = true;
        return result.rows;
      });
      // better-sqlite3 answers synchronously: a read that did not wait would have answered by the next immediate.
      await new Promise((resolve) => setImmediate(resolve));
      expect(answered).toBe(false);
      release();
      expect(await transaction).toBe('rolled back');
      expect(await read).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
