/**
 * What is accepted can be read back: for every operation that creates or changes a record, any
 * request the served OpenAPI document accepts is either refused with a 4xx and leaves nothing
 * behind, or answers a record that its retrieve and every list of it return, with every response
 * (events included) valid against the contract's response schema.
 *
 * Bodies come from the document's request schemas (testing/openapi-arbitraries.ts), ids from
 * records made first in an account of the operation's own. READBACK_RUNS sets the runs per
 * operation; the seed is FUZZ_SEED's.
 */
import { type EndpointDefinition, type OperationId, endpoints } from '@convo/core';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type * as z from 'zod';
import { accountsService } from '../services/accounts.js';
import { type TestServer, describeEachDialect } from '../testing/harness.js';
import {
  type Hints,
  type OpenApiDocument,
  REFUSED_UNITS,
  type Schema,
  arbitraryOf,
  differencesFromSent,
  operationsOf,
  weighted,
} from '../testing/openapi-arbitraries.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20261125);
const RUNS = Number(process.env.READBACK_RUNS ?? 25);

type Resource = { id: string } & Record<string, unknown>;
/** A read of the contract: an operation, its path parameters and its query. */
type Read = [OperationId, Record<string, string>, Record<string, string>?];
/** Where a write's record must be found again: its retrieve, the lists that hold it, and other reads it changes. */
interface ReadBack {
  retrieve?: Read;
  lists: Read[];
  related?: Read[];
}

const contactReads = (r: Resource): ReadBack => ({
  retrieve: ['contacts.retrieve', { id: r.id }],
  lists: [['contacts.list', {}]],
  related: [['tags.list', {}]],
});
const conversationReads = (r: Resource): ReadBack => ({
  retrieve: ['conversations.retrieve', { id: r.id }],
  lists: [
    ['conversations.list', {}],
    ['conversations.list', {}, { status: String(r.status), platform: String(r.platform) }],
  ],
});
const messageReads = (r: Resource): ReadBack => ({
  lists: [['conversations.listMessages', { id: String(r.conversation_id) }]],
  related: [
    ['conversations.retrieve', { id: String(r.conversation_id) }],
    ['conversations.list', {}],
  ],
});
const endpointReads = (r: Resource): ReadBack => ({
  retrieve: ['webhookEndpoints.retrieve', { id: r.id }],
  lists: [['webhookEndpoints.list', {}]],
});
const channelReads = (r: Resource): ReadBack => ({
  retrieve: ['channels.retrieve', { id: r.id }],
  lists: [
    ['channels.list', {}],
    ['channels.list', {}, { platform: String(r.platform) }],
  ],
});

const orderReads = (r: Resource): ReadBack => ({
  retrieve: ['orders.retrieve', { id: r.id }],
  lists: [
    ['orders.list', {}],
    ['orders.list', {}, { contact_id: String(r.contact_id), status: String(r.status) }],
  ],
});
const workflowReads = (r: Resource): ReadBack => ({
  retrieve: ['workflows.retrieve', { id: r.id }],
  lists: [['workflows.list', {}]],
});

/** Every operation that creates or changes a record, and where its record is read back. */
const WRITES: Partial<Record<OperationId, (record: Resource) => ReadBack>> = {
  'contacts.create': contactReads,
  'contacts.update': contactReads,
  'contacts.tags.add': contactReads,
  'contacts.tags.remove': contactReads,
  'conversations.create': conversationReads,
  'conversations.update': conversationReads,
  'messages.send': messageReads,
  'sandbox.inbound': messageReads,
  'orders.create': orderReads,
  'orders.update': orderReads,
  // A tag has no id: its new name is read back in the tags list (read and parsed).
  'tags.update': () => ({ lists: [], related: [['tags.list', {}]] }),
  'workflows.create': workflowReads,
  'workflows.update': workflowReads,
  'workflows.trigger': (r) => ({ lists: [['workflows.listRuns', { id: String(r.workflow_id) }]] }),
  'webhookEndpoints.create': endpointReads,
  'webhookEndpoints.update': endpointReads,
  // A replay answers a count: its endpoint's deliveries are read (and parsed) after it.
  'webhookEndpoints.replay': (r) => ({
    lists: [],
    related: [['webhookEndpoints.listDeliveries', { id: String(r.endpoint_id) }]],
  }),
  'channels.create': channelReads,
  'channels.update': channelReads,
};

/** The records an operation's requests refer to, made in an account of their own. */
interface Fixtures {
  key: string;
  contact: string;
  conversation: string;
  workflow: string;
  endpoint: string;
  channel: string;
  order: string;
  tag: string;
}

async function createFixtures(server: TestServer, operationId: string): Promise<Fixtures> {
  const account = await accountsService.createAccount(
    { database: server.database },
    {
      name: `Read back ${operationId}`,
      plan: 'enterprise',
      rateLimitRpm: 1_000_000,
    },
  );
  const key = (
    await accountsService.createKey({ database: server.database }, { accountId: account.id, type: 'full_access' })
  ).key;
  const call = async (method: string, path: string, body: unknown) => {
    const res = await server.request(method, path, { key, body });
    if (res.status >= 300) throw new Error(`fixture ${method} ${path}: ${res.status} ${res.text}`);
    return res.body as Resource;
  };
  const tag = 'read-back';
  const contact = await call('POST', '/contacts', { name: 'Reader', phone: '+15550000001', tags: [tag] });
  const conversation = await call('POST', '/conversations', { contact_id: contact.id, platform: 'whatsapp' });
  const workflow = await call('POST', '/workflows', { name: 'Tag', steps: [{ type: 'add_tag', tag: 'run' }] });
  const endpoint = await call('POST', '/webhook_endpoints', { url: 'http://127.0.0.1:9/read-back', events: ['*'] });
  const channel = await call('POST', '/channels', {
    platform: 'whatsapp',
    external_id: '1000001',
    access_token: 'read-back-token',
    app_secret: 'read-back-secret',
  });
  const order = await call('POST', '/orders', {
    contact_id: contact.id,
    currency: 'USD',
    items: [{ name: 'Read back', quantity: 1, unit_amount: 100 }],
  });
  return {
    key,
    contact: contact.id,
    conversation: conversation.id,
    workflow: workflow.id,
    endpoint: endpoint.id,
    channel: channel.id,
    order: order.id,
    tag,
  };
}

/** The id a path parameter takes: the fixture of the operation's own resource. */
function pathParameters(operationId: OperationId, fixtures: Fixtures, tag: string): Record<string, string> {
  const resource = operationId.split('.')[0];
  const id = {
    contacts: fixtures.contact,
    conversations: fixtures.conversation,
    workflows: fixtures.workflow,
    webhookEndpoints: fixtures.endpoint,
    channels: fixtures.channel,
    orders: fixtures.order,
  }[resource as string];
  return { ...(id ? { id } : {}), tag };
}

const responseSchema = (operationId: OperationId): z.ZodType => {
  const definition: EndpointDefinition = endpoints[operationId];
  if (!definition.response) throw new Error(`${operationId} answers no body`);
  return definition.response;
};

/**
 * The body with what the server refuses put in one place (`pick` chooses it): a NUL or a lone
 * surrogate at the end of a string, or a `__proto__` key (or a key holding the unit) in an object;
 * and the field the refusal must name. Undefined for a body with no string and no object.
 */
function spoiled(body: unknown, pick: number, unit: string): { body: unknown; field: string } | undefined {
  const copy = body === undefined ? undefined : JSON.parse(JSON.stringify(body));
  const strings: (string | number)[][] = [];
  const objects: (string | number)[][] = [];
  const walk = (value: unknown, path: (string | number)[]) => {
    if (typeof value === 'string') strings.push(path);
    else if (Array.isArray(value)) {
      for (const [i, inner] of value.entries()) walk(inner, [...path, i]);
    } else if (value && typeof value === 'object') {
      objects.push(path);
      for (const [key, inner] of Object.entries(value)) walk(inner, [...path, key]);
    }
  };
  walk(copy, []);
  const at = (path: (string | number)[]) => path.reduce<any>((value, key) => value[key], copy);
  const places = unit === '__proto__' || strings.length === 0 ? objects : strings;
  const path = places[pick % Math.max(places.length, 1)];
  if (!path) return undefined;
  if (places === strings) {
    const parent = at(path.slice(0, -1));
    const last = path[path.length - 1] as string | number;
    parent[last] = `${parent[last]}${unit}`;
    return { body: copy, field: path.join('.') };
  }
  const key = unit === '__proto__' ? unit : `k${unit}`;
  // defineProperty makes an own `__proto__` key, which JSON.stringify then writes as any other.
  Object.defineProperty(at(path), key, { value: 'x', enumerable: true, writable: true, configurable: true });
  return { body: copy, field: [...path, key].join('.') };
}

const pathOf = (operationId: OperationId, params: Record<string, string>) =>
  endpoints[operationId].path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));

/** Reads one operation of the contract, all pages of a list, each answer parsed by its response schema. */
async function read(server: TestServer, key: string, [operationId, params, query]: Read): Promise<Resource[]> {
  const schema = responseSchema(operationId);
  const records: Resource[] = [];
  for (let offset = 0; ; offset += 100) {
    const isList = /\.list/.test(operationId);
    const res = await server.request('GET', pathOf(operationId, params), {
      key,
      query: isList ? { ...query, limit: 100, offset } : query,
    });
    expect(res.status, `${operationId} ${res.text}`).toBe(200);
    const parsed = schema.safeParse(res.body);
    expect(
      parsed.success,
      `${operationId} answered what its schema refuses: ${parsed.error?.message}\n${res.text.slice(0, 2000)}`,
    ).toBe(true);
    if (!isList) return [res.body as Resource];
    const page = res.body as { data: Resource[]; total: number };
    records.push(...page.data);
    if (offset + 100 >= page.total) return records;
  }
}

describeEachDialect('what is accepted can be read back', (server) => {
  let doc: OpenApiDocument;
  beforeAll(async () => {
    doc = (await (await fetch(`${server().baseUrl}/openapi.json`)).json()) as OpenApiDocument;
  });

  it('covers every operation that creates or changes a record', () => {
    const writes = Object.entries(endpoints)
      .filter(
        ([, e]: [string, EndpointDefinition]) =>
          // An upload is read back byte for byte by files.test.ts.
          (e.method === 'POST' || e.method === 'PATCH') &&
          e.body !== undefined &&
          e.response !== undefined &&
          !e.upload,
      )
      .map(([id]) => id);
    expect(Object.keys(WRITES).sort()).toEqual([...writes, 'contacts.tags.remove'].sort());
  });

  describe.concurrent('operations', () => {
    for (const operationId of Object.keys(WRITES) as OperationId[]) {
      it(operationId, async ({ expect }) => {
        const definition = endpoints[operationId];
        const operation = operationsOf(doc).find((op) => op.id === operationId);
        if (!operation) throw new Error(`${operationId} is not in the served document`);
        const fixtures = await createFixtures(server(), operationId);
        const hints: Hints = {
          byName: (name) =>
            ({
              contact_id: fc.constant(fixtures.contact),
              conversation_id: fc.constant(fixtures.conversation),
            })[name],
          url: weighted<string>(
            [3, fc.constant('http://127.0.0.1:9/read-back')],
            [1, fc.webUrl({ validSchemes: ['https'] })],
          ),
        };
        const bodySchema = operation.spec.requestBody?.content['application/json']?.schema as Schema | undefined;
        const body = bodySchema ? arbitraryOf(doc, hints, bodySchema) : fc.constant(undefined);
        const tag = weighted<string>([3, fc.constant(fixtures.tag)], [1, fc.string({ minLength: 1, maxLength: 64 })]);
        let written = 0;

        const spoil = weighted<[number, string] | null>(
          [3, fc.constant(null)],
          [1, fc.tuple(fc.nat(), fc.constantFrom(...REFUSED_UNITS, '__proto__'))],
        );

        await fc.assert(
          fc.asyncProperty(body, tag, spoil, async (valid, pathTag, spoiling) => {
            const bad = spoiling ? spoiled(valid, ...spoiling) : undefined;
            const sent = bad ? bad.body : valid;
            if (operationId === 'contacts.tags.remove') {
              await server().request('POST', pathOf('contacts.tags.add', { id: fixtures.contact }), {
                key: fixtures.key,
                body: { tag: pathTag },
              });
            }
            const eventsBefore = (await read(server(), fixtures.key, ['events.list', {}])).length;
            const path = pathOf(operationId, pathParameters(operationId, fixtures, pathTag));
            const res = await server().request(definition.method, path, { key: fixtures.key, body: sent });
            expect(res.status, `${definition.method} ${path} ${JSON.stringify(sent)}\n${res.text}`).toBeLessThan(500);
            const events = await read(server(), fixtures.key, ['events.list', {}]);
            if (bad) {
              // What no request may hold is refused, at its place (another problem of the same field may be named
              // instead).
              expect(res.status, `${bad.field} spoiled: ${JSON.stringify(sent)}\n${res.text}`).toBe(400);
              const fields = ((res.body.error.details.issues ?? [res.body.error.details]) as { field: string }[]).map(
                (issue) => issue.field,
              );
              expect(fields, res.text).toContain(bad.field);
            }
            if (res.status >= 400) {
              expect(events.length, `a refused ${operationId} emitted an event`).toBe(eventsBefore);
              return;
            }
            expect(res.status).toBe(definition.status);
            const record = responseSchema(operationId).parse(res.body) as Resource;
            written++;
            // Exactly as sent: in the answer, its retrieve and every list that holds it.
            const exactly = (read: unknown, where: string) =>
              expect(differencesFromSent(sent, read), `${where} of ${JSON.stringify(sent)}`).toEqual([]);
            // A replay answers how many deliveries it queued, not a record of what it was sent.
            if (operationId !== 'webhookEndpoints.replay') exactly(res.body, 'the answer');
            const { retrieve, lists, related = [] } = (WRITES[operationId] as (r: Resource) => ReadBack)(record);
            if (retrieve) {
              const [retrieved] = await read(server(), fixtures.key, retrieve);
              expect(retrieved?.id).toBe(record.id);
              exactly(retrieved, retrieve[0]);
            }
            for (const list of lists) {
              const listed = await read(server(), fixtures.key, list);
              expect(
                listed.map((r) => r.id),
                `${list[0]} ${JSON.stringify(list[2] ?? {})}`,
              ).toContain(record.id);
              exactly(
                listed.find((r) => r.id === record.id),
                list[0],
              );
            }
            for (const other of related) await read(server(), fixtures.key, other);
          }),
          { seed: SEED, numRuns: RUNS, endOnFailure: true },
        );
        expect(written, 'some requests succeeded').toBeGreaterThan(0);
      }, 120_000);
    }
  });
});
