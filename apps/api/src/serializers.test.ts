import { endpoints } from '@convo/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { HOT_OPERATIONS, compileSerializer, forSerialization } from './serializers.js';

/** What the zod serializer (every other route) writes: the encoded output, then JSON.stringify. */
const viaZod = (schema: z.ZodType, value: unknown) => JSON.stringify(z.encode(schema, value as never));

// Any string: lone surrogates, control characters, quotes, backslashes, U+2028, emoji.
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom('', '"\\/\b\f\n\r\t', '\u2028\u2029', '\ud800', 'a\udc00b', '😀'),
);
const nullableText = fc.option(text, { nil: null });
const timestamp = fc
  .date({ min: new Date('2000-01-01T00:00:00.000Z'), max: new Date('2099-12-31T23:59:59.999Z'), noInvalidDate: true })
  .map((d) => d.toISOString());
const id = (prefix: string) => fc.stringMatching(/^[0-9A-HJKMNP-TV-Z]{26}$/).map((body) => `${prefix}_${body}`);
const count = fc.nat({ max: Number.MAX_SAFE_INTEGER });

const platform = fc.constantFrom('whatsapp', 'facebook', 'instagram');
const conversation = fc.record({
  id: id('conv'),
  contact: fc.record({ id: id('ct'), name: nullableText, phone: nullableText }),
  platform,
  channel_id: fc.option(id('ch'), { nil: null }),
  status: fc.constantFrom('active', 'resolved', 'archived'),
  message_count: count,
  last_message: fc.option(fc.record({ content: text, timestamp }), { nil: null }),
  created_at: timestamp,
  updated_at: timestamp,
});
const contact = fc.record({
  id: id('ct'),
  name: nullableText,
  phone: nullableText,
  email: nullableText,
  tags: fc.array(text, { maxLength: 5 }),
  attributes: fc.dictionary(
    text,
    fc.oneof(text, fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.boolean()),
    { maxKeys: 5 },
  ),
  identities: fc.array(fc.record({ platform, channel_id: id('ch'), external_id: text }), { maxLength: 3 }),
  created_at: timestamp,
  updated_at: timestamp,
});
const message = fc.record({
  id: id('msg'),
  conversation_id: id('conv'),
  direction: fc.constantFrom('inbound', 'outbound'),
  type: fc.constantFrom(
    'text',
    'template',
    'image',
    'video',
    'audio',
    'document',
    'sticker',
    'location',
    'reaction',
    'unsupported',
  ),
  content: text,
  status: fc.constantFrom('queued', 'sent', 'delivered', 'read', 'failed'),
  platform_message_id: nullableText,
  error: fc.option(fc.record({ code: text, message: text }), { nil: null }),
  media: fc.option(
    fc.record(
      {
        id: text,
        mime_type: text,
        filename: fc.option(text, { nil: undefined }),
        file_id: nullableText,
        status: fc.constantFrom('pending', 'stored', 'failed', 'too_large'),
        error: fc.option(fc.record({ code: text, message: text }), { nil: null }),
      },
      { requiredKeys: ['id', 'mime_type', 'file_id', 'status', 'error'] },
    ),
    {
      nil: null,
    },
  ),
  created_at: timestamp,
  updated_at: timestamp,
});
const listOf = <T>(item: fc.Arbitrary<T>) =>
  fc.record({
    data: fc.array(item, { maxLength: 5 }),
    total: count,
    limit: fc.integer({ min: 1, max: 100 }),
    offset: count,
    has_more: fc.boolean(),
  });

const samples: Record<string, fc.Arbitrary<unknown>> = {
  'conversations.list': listOf(conversation),
  'conversations.retrieve': conversation,
  'conversations.listMessages': listOf(message),
  'messages.send': message,
  'contacts.list': listOf(contact),
  'contacts.retrieve': contact,
};

describe('hot-route serializers', () => {
  it('cover exactly the hot operations', () => {
    expect(Object.keys(samples).sort()).toEqual([...HOT_OPERATIONS].sort());
  });

  for (const operationId of HOT_OPERATIONS) {
    it(`write ${operationId} byte for byte as the zod serializer does`, () => {
      const schema = (endpoints[operationId] as { response?: z.ZodType }).response as z.ZodType;
      const serialize = compileSerializer(schema);
      const arbitrary = samples[operationId] as fc.Arbitrary<unknown>;
      fc.assert(
        fc.property(arbitrary, (value) => {
          // The sample is valid contract output (else the comparison would prove nothing).
          expect(schema.safeParse(value).success).toBe(true);
          expect(serialize(value)).toBe(viaZod(schema, value));
        }),
        { numRuns: 300 },
      );
    });
  }

  it('leave out an own __proto__ key of a record, as the zod serializer does', () => {
    const schema = endpoints['contacts.retrieve'].response;
    const value = {
      id: 'ct_VNMAAPJNP0MMKPMK0MK0MKJNV0',
      name: null,
      phone: '',
      email: null,
      tags: [],
      attributes: JSON.parse('{"__proto__":"","plan":"gold"}') as Record<string, string>,
      identities: [],
      created_at: '2000-01-01T00:00:00.000Z',
      updated_at: '2000-01-01T00:00:00.000Z',
    };
    expect(compileSerializer(schema)(value)).toBe(viaZod(schema, value));
    expect(compileSerializer(schema)(value)).toContain('"attributes":{"plan":"gold"}');
  });

  it('drop what the contract does not declare, as the zod serializer does', () => {
    const schema = endpoints['conversations.retrieve'].response;
    const value = fc.sample(conversation, { numRuns: 1, seed: 1 })[0] as Record<string, unknown>;
    const withExtra = {
      ...value,
      account_id: 'acct_secret',
      contact: { ...(value.contact as object), phone_digits: '1' },
    };
    expect(compileSerializer(schema)(withExtra)).toBe(viaZod(schema, value));
  });

  it('turn nullable and scalar unions into forms chosen without validation', () => {
    expect(forSerialization({ anyOf: [{ type: 'object', properties: {} }, { type: 'null' }] })).toEqual({
      type: 'object',
      properties: {},
      nullable: true,
    });
    expect(forSerialization({ anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] })).toEqual({
      type: ['string', 'number', 'boolean'],
    });
    expect(forSerialization({ anyOf: [{ $ref: '#/a' }, { $ref: '#/b' }] })).toEqual({
      anyOf: [{ $ref: '#/a' }, { $ref: '#/b' }],
    });
  });
});
