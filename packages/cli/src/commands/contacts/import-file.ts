import { extname } from 'node:path';
import { parse } from 'csv-parse/sync';
import { UsageError } from '../../errors.js';

/**
 * Reading a contacts file for `convo contacts import`: each row becomes a contact body (as
 * `contacts create` takes it) or a problem, with the line it starts on in the file.
 */
export interface ImportRow {
  /** 1-based line of the file where the row starts. */
  line: number;
  body?: Record<string, unknown>;
  /** Why the row cannot be sent. */
  error?: string;
}

export type ImportFormat = 'csv' | 'jsonl';

export function formatOfFile(path: string): ImportFormat | undefined {
  const extension = extname(path).toLowerCase();
  if (extension === '.csv') return 'csv';
  if (extension === '.jsonl' || extension === '.ndjson') return 'jsonl';
  return undefined;
}

export function parseContactsFile(text: string, format: ImportFormat): ImportRow[] {
  return format === 'csv' ? parseContactsCsv(text) : parseContactsJsonl(text);
}

/** Separators of the `tags` column: `vip;new` or `vip|new`. */
const TAG_SEPARATOR = /[;|]/;
/** The separator `contacts export` writes. */
export const TAG_SEPARATOR_OUT = ';';
const ATTRIBUTE_PREFIX = 'attr.';
const SCALAR_COLUMNS = ['name', 'phone', 'email'] as const;

/** The cell that clears a field (`name`, `email`, `tags`, an attribute): a blank cell leaves it as it is. */
export const CLEAR_CELL = '-';

/**
 * CSV with a header row. Columns: `name`, `phone`, `email`, `tags` (separated by `;` or `|`) and
 * `attr.<key>` for each attribute. One rule for every column: a blank cell leaves the field as it
 * is (it is left out of the body), `-` clears it (null, no tags, the attribute null: removed on
 * import). Blank lines are skipped.
 */
export function parseContactsCsv(text: string): ImportRow[] {
  // Plain LF line ends keep csv-parse's line count exact (it counts CR LF inside quotes twice).
  const normalized = text.replace(/\r\n?/g, '\n');
  let records: { record: string[]; info: { lines: number } }[];
  try {
    records = parse(normalized, {
      bom: true,
      info: true,
      relax_column_count: true,
      skip_empty_lines: false,
    }) as unknown as typeof records;
  } catch (error) {
    throw new UsageError(`the CSV cannot be read: ${(error as Error).message}`);
  }
  const [header, ...rows] = records;
  if (!header) throw new UsageError('the CSV is empty: it needs a header row (name, phone, email, tags, attr.<key>)');

  const columns = header.record.map((raw) => {
    const name = raw.trim();
    const lower = name.toLowerCase();
    if ((SCALAR_COLUMNS as readonly string[]).includes(lower) || lower === 'tags') return { kind: lower, key: lower };
    if (lower.startsWith(ATTRIBUTE_PREFIX) && name.length > ATTRIBUTE_PREFIX.length)
      return { kind: 'attribute', key: name.slice(ATTRIBUTE_PREFIX.length) };
    throw new UsageError(
      `unknown CSV column "${name}" (line 1): the columns are name, phone, email, tags and attr.<key>`,
    );
  });

  const out: ImportRow[] = [];
  let previousEnd = header.info.lines;
  for (const { record, info } of rows) {
    const line = previousEnd + 1;
    previousEnd = info.lines;
    if (record.every((cell) => cell.trim() === '')) continue;
    if (record.length !== columns.length) {
      out.push({ line, error: `expected ${columns.length} fields, found ${record.length}` });
      continue;
    }
    const body: Record<string, unknown> = {};
    const attributes: Record<string, string | null> = {};
    columns.forEach((column, index) => {
      const value = (record[index] ?? '').trim();
      if (value === '') return;
      // A phone cannot be cleared: `-` there is sent as it is (and refused as no phone number).
      if (value === CLEAR_CELL && column.kind !== 'phone') {
        if (column.kind === 'tags') body.tags = [];
        else if (column.kind === 'attribute') attributes[column.key] = null;
        else body[column.key] = null;
        return;
      }
      if (column.kind === 'tags') {
        const tags = value
          .split(TAG_SEPARATOR)
          .map((t) => t.trim())
          .filter(Boolean);
        if (tags.length > 0) body.tags = tags;
      } else if (column.kind === 'attribute') attributes[column.key] = value;
      else body[column.key] = value;
    });
    if (Object.keys(attributes).length > 0) body.attributes = attributes;
    out.push({ line, body });
  }
  return out;
}

/** One contact body (a JSON object) per line; blank lines are skipped. */
export function parseContactsJsonl(text: string): ImportRow[] {
  const out: ImportRow[] = [];
  text
    .replace(/^\ufeff/, '')
    .split(/\r?\n/)
    .forEach((content, index) => {
      const line = index + 1;
      if (content.trim() === '') return;
      let value: unknown;
      try {
        value = JSON.parse(content);
      } catch (error) {
        out.push({ line, error: `not valid JSON: ${(error as Error).message}` });
        return;
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        out.push({ line, error: 'not a JSON object' });
      else out.push({ line, body: value as Record<string, unknown> });
    });
  return out;
}
