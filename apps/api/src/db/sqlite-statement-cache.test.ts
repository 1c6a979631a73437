import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { withStatementCache } from './sqlite-statement-cache.js';

describe('the SQLite statement cache', () => {
  const opened: SQLite.Database[] = [];
  const open = () => {
    const sqlite = new SQLite(':memory:');
    opened.push(sqlite);
    return sqlite;
  };
  afterEach(() => {
    for (const sqlite of opened.splice(0)) if (sqlite.open) sqlite.close();
  });

  it('prepares a statement once and binds each call its own parameters', async () => {
    const sqlite = open();
    let prepared = 0;
    const prepare = sqlite.prepare.bind(sqlite);
    const counting = Object.assign(Object.create(sqlite) as SQLite.Database, {
      prepare: (text: string) => {
        prepared++;
        return prepare(text);
      },
      close: () => sqlite.close(),
    });
    const db = new Kysely<Record<string, never>>({
      dialect: new SqliteDialect({ database: withStatementCache(counting) }),
    });
    const answers = [];
    for (const value of [1, 2, 3])
      answers.push((await sql<{ doubled: number }>`select ${value} * 2 as doubled`.execute(db)).rows[0]?.doubled);
    expect(answers).toEqual([2, 4, 6]);
    expect(prepared).toBe(1);
  });

  it('drops the first prepared statement beyond its size, and prepares it again when asked', () => {
    const sqlite = open();
    const cache = withStatementCache(sqlite, 2);
    const first = cache.prepare('select 1');
    expect(cache.prepare('select 1')).toBe(first);
    cache.prepare('select 2');
    cache.prepare('select 3');
    const again = cache.prepare('select 1');
    expect(again).not.toBe(first);
    expect(again.all([])).toEqual([{ 1: 1 }]);
  });
});
