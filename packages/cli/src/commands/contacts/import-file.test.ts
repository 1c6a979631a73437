import { describe, expect, it } from 'vitest';
import { UsageError } from '../../errors.js';
import { formatOfFile, parseContactsCsv, parseContactsJsonl } from './import-file.js';
import { changedFields } from './import.js';

describe('CSV', () => {
  it('maps columns to a contact body, with the line each row starts on', () => {
    const csv = [
      'name,phone,email,tags,attr.tier,attr.Source',
      'Ana Souza,+5511987654321,ana@example.com,vip;new,gold,ads',
      '"Bea',
      'Lima",+5511900000002,,vip | old,,',
      '',
      'Caio,+5511900000003,,,,',
    ].join('\n');
    expect(parseContactsCsv(csv)).toEqual([
      {
        line: 2,
        body: {
          name: 'Ana Souza',
          phone: '+5511987654321',
          email: 'ana@example.com',
          tags: ['vip', 'new'],
          attributes: { tier: 'gold', Source: 'ads' },
        },
      },
      { line: 3, body: { name: 'Bea\nLima', phone: '+5511900000002', tags: ['vip', 'old'] } },
      { line: 6, body: { name: 'Caio', phone: '+5511900000003' } },
    ]);
  });

  it('leaves a field as it is for a blank cell in every column, and clears it for "-"', () => {
    const csv = [
      'name,phone,email,tags,attr.tier,attr.city',
      'Ana,+1555000001,,,,Rio',
      ' - ,+1555000002, - ,-,-,',
    ].join('\n');
    expect(parseContactsCsv(csv)).toEqual([
      { line: 2, body: { name: 'Ana', phone: '+1555000001', attributes: { city: 'Rio' } } },
      { line: 3, body: { name: null, phone: '+1555000002', email: null, tags: [], attributes: { tier: null } } },
    ]);
  });

  it('counts lines the same with CR LF line ends and a byte-order mark', () => {
    const csv = '\ufeffphone,name\r\n+1555000001,"A\r\nB"\r\n+1555000002,C\r\n';
    expect(parseContactsCsv(csv).map((r) => r.line)).toEqual([2, 4]);
  });

  it('reports a row with the wrong number of fields, and goes on', () => {
    expect(parseContactsCsv('name,phone\nAna,+1555000001,extra\nBea,+1555000002\n')).toEqual([
      { line: 2, error: 'expected 2 fields, found 3' },
      { line: 3, body: { name: 'Bea', phone: '+1555000002' } },
    ]);
  });

  it('refuses unknown columns and unreadable files as usage errors', () => {
    expect(() => parseContactsCsv('name,mobile\nAna,+1\n')).toThrow(/unknown CSV column "mobile"/);
    expect(() => parseContactsCsv('')).toThrow(UsageError);
    expect(() => parseContactsCsv('name,phone\n"Ana,+1\n')).toThrow(UsageError);
  });
});

describe('JSON Lines', () => {
  it('takes one body per line, reporting bad lines by number', () => {
    const jsonl = ['{"phone":"+1555000001","tags":["vip"]}', '', '{nope', '[1]', '{"phone":"+1555000002"}'].join('\n');
    expect(parseContactsJsonl(jsonl)).toEqual([
      { line: 1, body: { phone: '+1555000001', tags: ['vip'] } },
      { line: 3, error: expect.stringMatching(/^not valid JSON/) },
      { line: 4, error: 'not a JSON object' },
      { line: 5, body: { phone: '+1555000002' } },
    ]);
  });
});

describe('files', () => {
  it('knows the format by extension', () => {
    expect(formatOfFile('a.CSV')).toBe('csv');
    expect(formatOfFile('a.jsonl')).toBe('jsonl');
    expect(formatOfFile('a.ndjson')).toBe('jsonl');
    expect(formatOfFile('a.txt')).toBeUndefined();
  });
});

describe('rerunning an import', () => {
  const contact = {
    id: 'ct_1',
    name: 'Ana',
    phone: '+1555000001',
    email: null,
    tags: ['vip', 'new'],
    attributes: { tier: 'gold', visits: 3 },
    identities: [],
    created_at: '2026-11-22T10:15:30.123Z',
    updated_at: '2026-11-22T10:15:30.123Z',
  };

  it('changes nothing when the row matches the contact', () => {
    expect(
      changedFields(contact, {
        name: 'Ana',
        phone: '+1555000001',
        tags: ['new', 'vip'],
        attributes: { visits: 3, tier: 'gold' },
      }),
    ).toEqual({});
  });

  it("merges a row's attributes into the contact's: the others stay, null removes one", () => {
    expect(changedFields(contact, { phone: '+1555000001', attributes: { tier: 'gold' } })).toEqual({});
    expect(changedFields(contact, { phone: '+1555000001', attributes: { city: 'Rio', tier: null } })).toEqual({
      attributes: { visits: 3, city: 'Rio' },
    });
    expect(changedFields(contact, { phone: '+1555000001', email: null, tags: [] })).toEqual({ tags: [] });
  });

  it('sends only the fields that differ', () => {
    expect(
      changedFields(contact, { name: 'Ana Souza', phone: '+1555000001', email: 'ana@example.com', tags: ['vip'] }),
    ).toEqual({
      name: 'Ana Souza',
      email: 'ana@example.com',
      tags: ['vip'],
    });
  });
});
