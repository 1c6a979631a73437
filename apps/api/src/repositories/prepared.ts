import type { Compilable, CompiledQuery, QueryResult } from 'kysely';
import type { Dialect } from '../db/dialect.js';
import type { Executor } from './tenant.js';

/**
 * What a statement compiled here runs on: an executor and its database's dialect, as a tenant
 * scope carries them (or `{ db, dialect }` for a query of no account's data).
 */
export interface RunsOn {
  readonly db: Executor;
  readonly dialect: Dialect;
}

/** A query compiled once: its SQL and, per parameter, the name of the value it takes (null: a constant of the SQL). */
interface Template {
  compiled: CompiledQuery;
  slots: (string | null)[];
}

/** Stands for value `name` while a query is built once; U+0000 is refused in every request. */
const placeholder = (name: string) => `\u0000prepared:${name}\u0000`;
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 marks a placeholder because no request may contain it.
const PLACEHOLDER = /^\u0000prepared:([A-Za-z0-9_]+)\u0000$/;

/**
 * The template of a query built with placeholders (placeholder) for the values `names`. Refuses a
 * query that computed with a value instead of using it as one, or that does not use one.
 */
function templateOf(compiled: CompiledQuery, names: string[], caller: string): Template {
  const slots = compiled.parameters.map((value) => {
    const match = typeof value === 'string' ? PLACEHOLDER.exec(value) : null;
    if (typeof value === 'string' && value.includes('\u0000') && !match)
      throw new Error(`${caller}: a value was computed with, not used as a value: ${compiled.sql}`);
    return match ? (match[1] as string) : null;
  });
  for (const name of names) {
    if (!slots.includes(name)) throw new Error(`${caller}: value ${name} is not a parameter of ${compiled.sql}`);
  }
  return { compiled, slots };
}

/** A template's parameters for these values (by name; an array's by index). */
const parametersOf = ({ compiled, slots }: Template, values: Record<string, unknown>) =>
  slots.map((slot, i) => (slot === null ? compiled.parameters[i] : values[slot]));

/**
 * Runs compiled SQL with these parameters, through Kysely like any other query. The copy names
 * its fields: spreading Kysely's frozen CompiledQuery takes V8's slow path on every call.
 */
const run = <Row>(
  target: RunsOn,
  { query, queryId, sql }: CompiledQuery,
  parameters: readonly unknown[],
): Promise<QueryResult<Row>> => target.db.executeQuery<Row>({ query, queryId, sql, parameters });

/**
 * A query of a fixed shape, built and compiled by Kysely once per dialect; each call only binds
 * its own values, sparing the hot queries (a key lookup, a read by id) Kysely's building and
 * compiling on every execution. `build` receives the executor and its dialect (RunsOn), then the
 * arguments; it must use each argument as a plain value (a `where` operand, a `set` value), never
 * compute with it; a query whose SQL depends on the values (optional filters) is built per call
 * as usual, or by preparedByShape.
 */
export function prepared<Args extends unknown[], Row>(
  build: (db: Executor, dialect: Dialect, ...args: Args) => Compilable<Row>,
) {
  // The SQL depends on the dialect alone: one template per dialect.
  const templates = new Map<Dialect, Template>();

  const templateFor = ({ db, dialect }: RunsOn, argumentCount: number): Template => {
    let template = templates.get(dialect);
    if (!template) {
      // Placeholders for as many arguments as this call has (a rest parameter has no length).
      const names = Array.from({ length: argumentCount }, (_, i) => String(i));
      template = templateOf(build(db, dialect, ...(names.map(placeholder) as Args)).compile(), names, 'prepared()');
      templates.set(dialect, template);
    }
    return template;
  };

  /** Runs the query with these values: the rows, and for writes the affected count. */
  return async (target: RunsOn, ...args: Args): Promise<QueryResult<Row>> => {
    const template = templateFor(target, args.length);
    return run<Row>(target, template.compiled, parametersOf(template, args as unknown as Record<string, unknown>));
  };
}

/**
 * Like prepared(), for a query whose SQL takes one of a few shapes (which filters a list has):
 * `build` receives the call's `shape`, which decides the SQL (a small plain object: its JSON
 * names it), and its `values`, which it must use as plain values only (as prepared()'s
 * arguments). Each shape is built and compiled once per dialect, each call then binds its values.
 * A value left undefined is not a parameter (its shape does not use it). `options` is ignored:
 * every statement is sent unnamed, so Postgres plans each for its own values.
 */
export function preparedByShape<Shape, Values extends Record<string, unknown>, Row>(
  build: (db: Executor, dialect: Dialect, shape: Shape, values: Values) => Compilable<Row>,
) {
  const templates = new Map<Dialect, Map<string, Template>>();

  const templateFor = ({ db, dialect }: RunsOn, shape: Shape, values: Values): Template => {
    let ofDialect = templates.get(dialect);
    if (!ofDialect) {
      ofDialect = new Map();
      templates.set(dialect, ofDialect);
    }
    const key = JSON.stringify(shape);
    let template = ofDialect.get(key);
    if (!template) {
      const names = Object.keys(values).filter((name) => values[name] !== undefined);
      const placeholders = Object.fromEntries(names.map((name) => [name, placeholder(name)])) as Values;
      template = templateOf(build(db, dialect, shape, placeholders).compile(), names, 'preparedByShape()');
      ofDialect.set(key, template);
    }
    return template;
  };

  return async (target: RunsOn, shape: Shape, values: Values): Promise<Row[]> => {
    const template = templateFor(target, shape, values);
    return (await run<Row>(target, template.compiled, parametersOf(template, values))).rows;
  };
}
