import type { Compilable, CompiledQuery, QueryResult } from 'kysely';
import { prepareOnPostgres, readNowOnSqlite } from '../db/database.js';
import { isPostgres } from '../db/dialect.js';
import type { Executor } from './tenant.js';

interface Template {
  compiled: CompiledQuery;
  /** Per parameter of the SQL: the index of the call's argument, or -1 for a constant. */
  slots: number[];
}

/** Stands for argument `i` while the query is built once; U+0000 is refused in every request. */
const placeholder = (i: number) => `\u0000prepared:${i}\u0000`;
const PLACEHOLDER = /^\u0000prepared:(\d+)\u0000$/;

/**
 * A query of a fixed shape, built and compiled by Kysely once per dialect; each call only binds
 * its own values. Kysely builds an operation tree and compiles it to SQL on every execution,
 * which was a quarter of the CPU time of the API's fastest requests (a key lookup and a read by
 * id). For the hot queries only: `build` must use each argument as a plain value (a `where`
 * operand, a `set` value), never compute with it; a query whose SQL depends on the values
 * (optional filters) is built per call as usual. On Postgres it runs as a named prepared
 * statement (prepareOnPostgres); a read on SQLite outside any transaction runs at once
 * (readNowOnSqlite).
 */
export function prepared<Args extends unknown[], Row>(build: (db: Executor, ...args: Args) => Compilable<Row>) {
  // The SQL depends on the dialect alone: one template per adapter class.
  const templates = new Map<unknown, Template>();

  const templateFor = (db: Executor, argumentCount: number): Template => {
    const adapter = db.getExecutor().adapter.constructor;
    let template = templates.get(adapter);
    if (!template) {
      // Placeholders for as many arguments as this call has (a rest parameter has no length).
      const compiled = build(db, ...(Array.from({ length: argumentCount }, (_, i) => placeholder(i)) as Args)).compile();
      const slots = compiled.parameters.map((value) => {
        const match = typeof value === 'string' ? PLACEHOLDER.exec(value) : null;
        if (typeof value === 'string' && value.includes('\u0000') && !match) throw new Error(`prepared(): an argument was computed with, not used as a value: ${compiled.sql}`);
        return match ? Number(match[1]) : -1;
      });
      for (let i = 0; i < argumentCount; i++) {
        if (!slots.includes(i)) throw new Error(`prepared(): argument ${i} is not a parameter of ${compiled.sql}`);
      }
      // Postgres parses and plans it once per connection, too.
      if (isPostgres(db)) prepareOnPostgres(compiled.sql);
      template = { compiled, slots };
      templates.set(adapter, template);
    }
    return template;
  };

  /** Runs the query with these values: the rows, and for writes the affected count. */
  return async (db: Executor, ...args: Args): Promise<QueryResult<Row>> => {
    const { compiled, slots } = templateFor(db, args.length);
    const parameters = slots.map((slot, i) => (slot === -1 ? compiled.parameters[i] : args[slot]));
    const now = readNowOnSqlite(db, compiled.sql, parameters);
    if (now) return now as QueryResult<Row>;
    return db.executeQuery<Row>({ ...compiled, parameters } as CompiledQuery<Row>);
  };
}

/**
 * Like prepared(), for a query whose SQL takes one of a few shapes (which filters a list has):
 * `build` receives the call's `shape`, which decides the SQL, and its `values`, which it must use
 * as plain values only (as prepared()'s arguments). A shape is built and compiled once per dialect
 * (`shapeKey` names it: the same key must always mean the same shape), each call then binds its
 * values. A value left undefined is not a parameter (its shape does not use it). On Postgres the
 * statement is named unless `planPerValue` (see executeNamed).
 */
export function preparedByShape<Shape, Values extends Record<string, unknown>, Row>(build: (db: Executor, shape: Shape, values: Values) => Compilable<Row>) {
  const templates = new Map<unknown, Map<string, { compiled: CompiledQuery; slots: (string | null)[] }>>();

  const templateFor = (db: Executor, shapeKey: string, shape: Shape, values: Values) => {
    const adapter = db.getExecutor().adapter.constructor;
    let ofAdapter = templates.get(adapter);
    if (!ofAdapter) templates.set(adapter, (ofAdapter = new Map()));
    let template = ofAdapter.get(shapeKey);
    if (!template) {
      const names = Object.keys(values).filter((name) => values[name] !== undefined);
      const placeholders = Object.fromEntries(names.map((name) => [name, namedPlaceholder(name)])) as Values;
      const compiled = build(db, shape, placeholders).compile();
      const slots = compiled.parameters.map((value) => {
        const match = typeof value === 'string' ? NAMED_PLACEHOLDER.exec(value) : null;
        if (typeof value === 'string' && value.includes('\u0000') && !match) throw new Error(`preparedByShape(): a value was computed with, not used as a value: ${compiled.sql}`);
        return match ? (match[1] as string) : null;
      });
      for (const name of names) {
        if (!slots.includes(name)) throw new Error(`preparedByShape(): value ${name} is not a parameter of ${compiled.sql}`);
      }
      template = { compiled, slots };
      ofAdapter.set(shapeKey, template);
    }
    return template;
  };

  return async (db: Executor, shapeKey: string, shape: Shape, values: Values, options: { planPerValue?: boolean } = {}): Promise<Row[]> => {
    const { compiled, slots } = templateFor(db, shapeKey, shape, values);
    const parameters = slots.map((slot, i) => (slot === null ? compiled.parameters[i] : values[slot]));
    if (isPostgres(db) && !options.planPerValue) prepareOnPostgres(compiled.sql);
    const now = readNowOnSqlite(db, compiled.sql, parameters);
    if (now) return now.rows as Row[];
    return (await db.executeQuery<Row>({ ...compiled, parameters } as CompiledQuery<Row>)).rows;
  };
}

const namedPlaceholder = (name: string) => `\u0000prepared:${name}\u0000`;
const NAMED_PLACEHOLDER = /^\u0000prepared:([A-Za-z0-9_]+)\u0000$/;

/**
 * Runs a query built per call as a named prepared statement on Postgres, so that each
 * connection parses and plans its shape once: for the list and search queries, whose shapes are
 * few (which filters are present) but whose planning took longer than their execution (1.6 ms
 * against 0.7 ms for a page of conversations). Only for call sites with a bounded number of
 * shapes: every distinct SQL text stays prepared on each connection. Elsewhere it is `execute()`.
 */
export async function executeNamed<Row>(db: Executor, query: Compilable<Row>, options: { planPerValue?: boolean } = {}): Promise<Row[]> {
  const compiled = query.compile();
  // planPerValue: a statement whose best plan depends on its values (searchPlannedPerValue) is
  // sent unnamed, so Postgres plans it for them every time instead of settling on a generic plan.
  if (isPostgres(db) && !options.planPerValue) prepareOnPostgres(compiled.sql);
  const now = readNowOnSqlite(db, compiled.sql, compiled.parameters);
  if (now) return now.rows as Row[];
  return (await db.executeQuery(compiled)).rows;
}
