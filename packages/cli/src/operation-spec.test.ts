import { endpoints } from '@convo/core';
import { describe, expect, it } from 'vitest';
import { OPERATION_COMMANDS } from './commands/index.js';
import { type FieldSpec, describeOperation, describeOperations, singular } from './operation-spec.js';

const specs = describeOperations(endpoints);
const field = (id: keyof typeof specs, part: 'query' | 'body', name: string): FieldSpec => {
  const found = specs[id][part]?.find((f) => f.name === name);
  if (!found) throw new Error(`${id} has no ${part} field ${name}`);
  return found;
};

/** A stand-in for a zod schema: what `toJSONSchema` answers is all the derivation reads. */
const schema = (json: object) => ({ toJSONSchema: () => json }) as never;

describe('options derived from the contract', () => {
  it('turns snake_case ids into options without _id', () => {
    expect(field('messages.send', 'body', 'conversation_id')).toMatchObject({
      option: 'conversation',
      placeholder: 'id',
      kind: 'string',
      required: true,
    });
    expect(field('conversations.create', 'body', 'contact_id')).toMatchObject({ option: 'contact', required: true });
    expect(field('orders.list', 'query', 'contact_id')).toMatchObject({ option: 'contact', required: false });
    expect(field('orders.create', 'body', 'placed_at').option).toBe('placed-at');
    // Meta's id of a channel is no Convo resource: it keeps its name, where contact_id becomes --contact.
    expect(field('channels.create', 'body', 'external_id').option).toBe('external-id');
  });

  it('takes enum choices, defaults and descriptions from the schemas', () => {
    expect(field('conversations.list', 'query', 'status').choices).toEqual(['active', 'resolved', 'archived']);
    expect(field('conversations.list', 'query', 'platform').choices).toEqual(['whatsapp', 'facebook', 'instagram']);
    expect(field('orders.create', 'body', 'status')).toMatchObject({
      choices: ['pending', 'paid', 'fulfilled', 'cancelled', 'refunded'],
      required: false,
    });
    expect(field('orders.create', 'body', 'status').description).toContain('default: pending');
    expect(field('conversations.list', 'query', 'limit')).toMatchObject({ kind: 'integer' });
    expect(field('conversations.list', 'query', 'limit').description).toContain('Page size, 1 to 100');
    expect(field('contacts.list', 'query', 'tag').description).toBe('Only contacts that have this tag');
    expect(field('contacts.create', 'body', 'phone').description).toContain('e.g. +14155550123');
  });

  it('makes arrays of strings a repeatable singular option', () => {
    expect(field('contacts.create', 'body', 'tags')).toMatchObject({ option: 'tag', kind: 'strings' });
  });

  it('makes objects of scalars repeatable key=value', () => {
    expect(field('contacts.create', 'body', 'attributes')).toMatchObject({
      option: 'attribute',
      kind: 'record',
      placeholder: 'key=value',
    });
  });

  it('makes arrays of objects of scalars repeatable a:b:c in schema order', () => {
    expect(field('orders.create', 'body', 'items')).toMatchObject({
      option: 'item',
      kind: 'objects',
      required: true,
      placeholder: 'name:quantity:unit_amount',
      itemFields: [
        { name: 'name', kind: 'string' },
        { name: 'quantity', kind: 'integer' },
        { name: 'unit_amount', kind: 'integer' },
      ],
    });
  });

  it('marks nullable fields and leaves deprecated ones out', () => {
    expect(field('contacts.update', 'body', 'email')).toMatchObject({ nullable: true, required: false });
    expect(field('contacts.create', 'body', 'phone').nullable).toBe(false);
    expect(specs['messages.send'].body?.map((f) => f.name)).toEqual([
      'conversation_id',
      'content',
      'type',
      'template',
      'media',
    ]);
  });

  it('knows path parameters, lists and bodies', () => {
    expect(specs['contacts.tags.remove'].pathParams).toEqual([
      { name: 'id', description: 'Id of the contact' },
      { name: 'tag', description: 'The tag' },
    ]);
    expect(specs['conversations.list'].list).toBe(true);
    expect(specs['conversations.listMessages'].list).toBe(true);
    expect(specs['conversations.retrieve'].list).toBe(false);
    expect(specs['contacts.delete'].body).toBeUndefined();
    expect(specs['contacts.delete'].query).toEqual([]);
  });

  it('is plain data, as the build inlines it', () => {
    expect(JSON.parse(JSON.stringify(specs))).toEqual(specs);
  });

  it('derives booleans, `_ids` arrays and other shapes generically', () => {
    const spec = describeOperation('contacts.create', {
      method: 'POST',
      path: '/things',
      permission: 'write',
      summary: 'Make a thing',
      status: 201,
      body: schema({
        type: 'object',
        properties: {
          enabled: { type: 'boolean' },
          contact_ids: { type: 'array', items: { type: 'string' } },
          categories: { type: 'array', items: { type: 'string' } },
          data: { type: 'object', additionalProperties: {} },
          ratio: { type: 'number' },
        },
        required: ['enabled'],
      }),
    });
    expect(spec.body?.map((f) => [f.option, f.kind, f.required])).toEqual([
      ['enabled', 'boolean', true],
      ['contact', 'strings', false],
      ['category', 'strings', false],
      ['data', 'json', false],
      ['ratio', 'number', false],
    ]);
  });

  it('refuses a field that would take an option of the CLI itself', () => {
    const definition = {
      method: 'GET',
      path: '/things',
      permission: 'read',
      summary: 'List things',
      status: 200,
    } as const;
    expect(() =>
      describeOperation('tags.list', {
        ...definition,
        query: schema({ type: 'object', properties: { json: { type: 'string' } } }),
      }),
    ).toThrow(/--json/);
    expect(() =>
      describeOperation('tags.list', {
        ...definition,
        query: schema({ type: 'object', properties: { contact_id: { type: 'string' }, contact: { type: 'string' } } }),
      }),
    ).toThrow(/--contact/);
  });

  it('singularises option names', () => {
    expect(['tags', 'attributes', 'items', 'categories', 'addresses', 'status'].map(singular)).toEqual([
      'tag',
      'attribute',
      'item',
      'category',
      'address',
      'status',
    ]);
  });
});

describe('the command map', () => {
  it('names a command for every operation of the table', () => {
    expect(Object.keys(OPERATION_COMMANDS).sort()).toEqual(Object.keys(endpoints).sort());
  });

  it('uses the agreed names', () => {
    expect(OPERATION_COMMANDS['contacts.delete'].command).toBe('contacts delete');
    expect(OPERATION_COMMANDS['conversations.retrieve'].command).toBe('conversations get');
    expect(OPERATION_COMMANDS['conversations.listMessages'].command).toBe('conversations messages');
    expect(OPERATION_COMMANDS['contacts.tags.add'].command).toBe('contacts tag add');
  });

  it('gives each operation its own command', () => {
    const commands = Object.values(OPERATION_COMMANDS).map((c) => c.command);
    expect(new Set(commands).size).toBe(commands.length);
  });
});
