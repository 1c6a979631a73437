import { type OutputStream, writeOut } from './terminal.js';

/**
 * How results are printed: a table for a person at a terminal, the API's JSON otherwise
 * (`--json`, or stdout piped to another program), JSON Lines for whole collections.
 */
export type OutputFormat = 'table' | 'json';

export const outputFormatOf = (options: { json?: boolean | undefined }, stdout: OutputStream): OutputFormat =>
  options.json || !stdout.isTTY ? 'json' : 'table';

export interface ListPage {
  data: unknown[];
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

/** The API's JSON as it came, pretty-printed. */
export const formatJson = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

/** One record per line. */
export const formatJsonLine = (value: unknown): string => `${JSON.stringify(value)}\n`;

const MAX_CELL_WIDTH = 48;

type Scalar = string | number | boolean | null;
const isScalar = (value: unknown): value is Scalar | undefined =>
  value === null || value === undefined || ['string', 'number', 'boolean'].includes(typeof value);
const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A value as one table cell: arrays of scalars joined, null as empty, line breaks flattened. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value) && value.every((v) => isScalar(v))) return value.map((v) => cellText(v)).join(', ');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value).replace(/\r?\n/g, ' ');
}

/** `contact.name` of `{contact: {name}}`. */
export function valueAt(record: unknown, path: string): unknown {
  let current = record;
  for (const key of path.split('.')) {
    if (!isPlainObject(current)) return undefined;
    current = current[key];
  }
  return current;
}

/**
 * The records' main scalar fields: top-level scalars and arrays of scalars, and the scalars of
 * nested objects with fixed keys (`contact.name`); free-form maps and arrays of objects are left out.
 */
export function defaultColumns(records: readonly unknown[]): string[] {
  const columns: string[] = [];
  const add = (column: string) => {
    if (!columns.includes(column)) columns.push(column);
  };
  for (const record of records) {
    if (!isPlainObject(record)) continue;
    for (const [key, value] of Object.entries(record)) {
      if (isScalar(value) || (Array.isArray(value) && value.every((v) => isScalar(v)))) add(key);
      else if (isPlainObject(value) && key !== 'attributes' && Object.values(value).every((v) => isScalar(v))) {
        for (const inner of Object.keys(value)) add(`${key}.${inner}`);
      }
    }
  }
  return columns;
}

const truncate = (text: string, width: number): string => {
  const chars = [...text];
  return chars.length <= width ? text : `${chars.slice(0, width - 1).join('')}…`;
};
const widthOf = (text: string) => [...text].length;
const pad = (text: string, width: number) => text + ' '.repeat(Math.max(0, width - widthOf(text)));

/** Columns separated by two spaces, each as wide as its widest cell (at most 48 characters). */
export function formatTable(columns: readonly string[], rows: readonly (readonly string[])[]): string {
  const cells = rows.map((row) => row.map((cell) => truncate(cell, MAX_CELL_WIDTH)));
  const widths = columns.map((column, i) => Math.max(widthOf(column), ...cells.map((row) => widthOf(row[i] ?? ''))));
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : pad(cell, widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return `${[line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n')}\n`;
}

/** A page as a table, with where it sits in the whole list. */
export function formatListTable(page: ListPage, columns?: readonly string[]): string {
  const chosen = columns ?? defaultColumns(page.data);
  if (page.data.length === 0)
    return page.total === 0 ? 'No records.\n' : `No records at offset ${page.offset} (total ${page.total}).\n`;
  const table = formatTable(
    chosen,
    page.data.map((record) => chosen.map((column) => cellText(valueAt(record, column)))),
  );
  const first = page.offset + 1;
  const last = page.offset + page.data.length;
  const more = page.has_more ? `; next page: --offset ${last}, every record: --all` : '';
  return `${table}\n${first}–${last} of ${page.total}${more}\n`;
}

/** Every field of a record as `key  value` lines; nested fields by dot path (`items.0.name`). */
export function formatRecordTable(record: unknown): string {
  const entries: [string, string][] = [];
  const walk = (value: unknown, path: string) => {
    if (isPlainObject(value) && Object.keys(value).length > 0) {
      for (const [key, inner] of Object.entries(value)) walk(inner, path ? `${path}.${key}` : key);
    } else if (Array.isArray(value) && value.some((v) => !isScalar(v))) {
      for (const [index, inner] of value.entries()) walk(inner, `${path}.${index}`);
    } else {
      entries.push([path, isPlainObject(value) ? '' : cellText(value)]);
    }
  };
  walk(record, '');
  const width = Math.max(0, ...entries.map(([key]) => widthOf(key)));
  return `${entries.map(([key, value]) => `${pad(key, width)}  ${value}`.trimEnd()).join('\n')}\n`;
}

/** Prints what an operation answered, in the chosen format. */
export async function printResult(
  stdout: OutputStream,
  result: unknown,
  options: { format: OutputFormat; list: boolean; columns?: readonly string[] | undefined; emptyMessage?: string },
): Promise<void> {
  if (result === undefined) {
    // 204: the API answered no JSON, so there is none to print.
    if (options.format === 'table' && options.emptyMessage) await writeOut(stdout, `${options.emptyMessage}\n`);
    return;
  }
  if (options.format === 'json') return writeOut(stdout, formatJson(result));
  const text = options.list ? formatListTable(result as ListPage, options.columns) : formatRecordTable(result);
  return writeOut(stdout, text);
}

/** Every record of an async iterable as JSON Lines; returns how many were written. */
export async function writeJsonLines(
  stdout: OutputStream,
  records: AsyncIterable<unknown>,
  onRecord?: (count: number) => void,
): Promise<number> {
  let count = 0;
  for await (const record of records) {
    await writeOut(stdout, formatJsonLine(record));
    count++;
    onRecord?.(count);
  }
  return count;
}
