import { describe, expect, it } from 'vitest';
import {
  cellText,
  defaultColumns,
  formatJson,
  formatListTable,
  formatRecordTable,
  formatTable,
  outputFormatOf,
  printResult,
  writeJsonLines,
} from './output.js';
import { CapturedOutput } from './test-terminal.js';

const contact = {
  id: 'ct_1',
  name: 'Ana Souza',
  phone: '+5511987654321',
  email: null,
  tags: ['vip', 'new'],
  attributes: { tier: 'gold' },
  created_at: '2026-11-22T10:15:30.123Z',
};
const conversation = {
  id: 'conv_1',
  contact: { id: 'ct_1', name: 'Ana', phone: '+1' },
  status: 'active',
  last_message: null,
};

describe('choosing the format', () => {
  it('prints tables on a terminal and JSON otherwise', () => {
    expect(outputFormatOf({}, new CapturedOutput(true))).toBe('table');
    expect(outputFormatOf({ json: true }, new CapturedOutput(true))).toBe('json');
    expect(outputFormatOf({}, new CapturedOutput(false))).toBe('json');
  });
});

describe('tables', () => {
  it('renders cells: arrays joined, null empty, line breaks flattened', () => {
    expect(cellText(['vip', 'new'])).toBe('vip, new');
    expect(cellText(null)).toBe('');
    expect(cellText('a\nb')).toBe('a b');
    expect(cellText(3)).toBe('3');
    expect(cellText({ a: 1 })).toBe('{"a":1}');
  });

  it('picks the scalar fields, nested scalars by dot path, and leaves out maps', () => {
    expect(defaultColumns([contact])).toEqual(['id', 'name', 'phone', 'email', 'tags', 'created_at']);
    expect(
      defaultColumns([conversation, { ...conversation, last_message: { content: 'hi', timestamp: 't' } }]),
    ).toEqual([
      'id',
      'contact.id',
      'contact.name',
      'contact.phone',
      'status',
      'last_message',
      'last_message.content',
      'last_message.timestamp',
    ]);
  });

  it('aligns columns and truncates long cells', () => {
    expect(
      formatTable(
        ['id', 'name'],
        [
          ['ct_1', 'Ana'],
          ['ct_22', 'x'.repeat(60)],
        ],
      ),
    ).toBe(`ID     NAME\nct_1   Ana\nct_22  ${'x'.repeat(47)}…\n`);
  });

  it('prints a page with where it sits in the list', () => {
    const text = formatListTable({ data: [contact], total: 3, limit: 1, offset: 1, has_more: true }, [
      'id',
      'name',
      'tags',
    ]);
    expect(text).toBe(
      'ID    NAME       TAGS\nct_1  Ana Souza  vip, new\n\n2–2 of 3; next page: --offset 2, every record: --all\n',
    );
    expect(formatListTable({ data: [], total: 0, limit: 20, offset: 0, has_more: false })).toBe('No records.\n');
  });

  it('prints a record as key/value lines with nested fields by path', () => {
    const text = formatRecordTable({
      id: 'ord_1',
      items: [{ name: 'Hat', quantity: 1 }],
      attributes: { tier: 'gold' },
      tags: [],
      note: null,
    });
    expect(text).toBe(
      'id                ord_1\nitems.0.name      Hat\nitems.0.quantity  1\nattributes.tier   gold\ntags\nnote\n',
    );
  });
});

describe('printing results', () => {
  it('prints the API JSON as it came with --json (lists: the one envelope)', async () => {
    const page = { data: [contact], total: 1, limit: 20, offset: 0, has_more: false };
    const out = new CapturedOutput(true);
    await printResult(out, page, { format: 'json', list: true });
    expect(JSON.parse(out.text)).toEqual(page);
    expect(out.text).toBe(formatJson(page));
  });

  it('prints nothing for a 204 unless a person is watching', async () => {
    const json = new CapturedOutput(false);
    await printResult(json, undefined, { format: 'json', list: false, emptyMessage: 'Deleted.' });
    expect(json.text).toBe('');
    const table = new CapturedOutput(true);
    await printResult(table, undefined, { format: 'table', list: false, emptyMessage: 'Deleted.' });
    expect(table.text).toBe('Deleted.\n');
  });

  it('writes JSON Lines, one record per line', async () => {
    async function* records() {
      yield { id: 1 };
      yield { id: 2, text: 'a\nb' };
    }
    const out = new CapturedOutput();
    expect(await writeJsonLines(out, records())).toBe(2);
    expect(out.text).toBe('{"id":1}\n{"id":2,"text":"a\\nb"}\n');
  });
});
