import { describe, expect, it } from 'vitest';
import { ID_PREFIXES, type Page } from './common.js';
import { type EndpointDefinition, type OperationId, endpoints, toOpenApiPath } from './endpoints.js';
import { ErrorBody } from './errors.js';
import { buildOpenApiDocument, sseFrameOf } from './openapi.js';
import { STORY_ORIGIN, errorExamples, operationExamples, story } from './story.js';

type Json = Record<string, unknown>;
const operations = Object.entries(endpoints) as [OperationId, EndpointDefinition][];

/** Every value inside `value`, with its key and its path. */
function walk(value: unknown, visit: (key: string, inner: unknown, path: string) => void, path = ''): void {
  if (Array.isArray(value)) {
    for (const [index, inner] of value.entries()) walk(inner, visit, `${path}.${index}`);
  } else if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      visit(key, inner, `${path}.${key}`);
      walk(inner, visit, `${path}.${key}`);
    }
  }
}

const isList = (value: unknown): value is Page<unknown> =>
  Boolean(value && typeof value === 'object' && 'has_more' in value && 'data' in value);

/** Two values the same, a timestamp given with or without milliseconds. */
function same(sent: unknown, answered: unknown): boolean {
  const instant = /^\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d)$/;
  if (typeof sent === 'string' && typeof answered === 'string' && instant.test(sent) && instant.test(answered))
    return Date.parse(sent) === Date.parse(answered);
  return JSON.stringify(sent) === JSON.stringify(answered);
}

/** Which kind of record a field names, by its name. */
const ID_FIELDS: Record<string, keyof typeof ID_PREFIXES> = {
  contact_id: 'contact',
  conversation_id: 'conversation',
  workflow_id: 'workflow',
  run_id: 'workflowRun',
  event_id: 'event',
  endpoint_id: 'webhookEndpoint',
  delivery_id: 'webhookDelivery',
  channel_id: 'channel',
};
const ULID = '[0-9A-HJKMNP-TV-Z]{26}';

const everyExample = () => [
  ...Object.entries(operationExamples).map(([id, example]) => [id, example] as const),
  ...Object.entries(story).map(([name, records]) => [`story.${name}`, records] as const),
  ['errors', errorExamples] as const,
];

describe('the story the examples tell', () => {
  it('gives every operation of the endpoint table a request the contract accepts and the answer it promises', () => {
    for (const [id, op] of operations) {
      const example = operationExamples[id];
      expect(example, id).toBeDefined();
      const { params, query, body } = example.request;
      expect(params === undefined, `${id} params`).toBe(op.params === undefined);
      expect(body === undefined, `${id} body`).toBe(op.body === undefined);
      if (op.params) expect(op.params.safeParse(params).error, `${id} params`).toBeUndefined();
      if (op.query) expect(op.query.safeParse(query ?? {}).error, `${id} query`).toBeUndefined();
      else expect(query, `${id} query`).toBeUndefined();
      // An upload's example names the file on the caller's machine whose bytes each client sends.
      if (op.upload) expect(typeof body?.[op.upload.part], `${id} body`).toBe('string');
      else if (op.body) expect(op.body.safeParse(body).error, `${id} body`).toBeUndefined();
      if (op.response) expect(op.response.safeParse(example.response).error, `${id} response`).toBeUndefined();
      else expect(example.response, `${id}: a ${op.status} has no body`).toBeUndefined();
    }
    expect(Object.keys(operationExamples).sort()).toEqual(Object.keys(endpoints).sort());
    for (const [status, body] of Object.entries(errorExamples)) {
      expect(ErrorBody.safeParse(body).error, status).toBeUndefined();
      expect(body.error.code, status).toBe(
        { 400: 'bad_request', 401: 'unauthorized', 403: 'forbidden', 404: 'not_found', 429: 'rate_limited' }[status] ??
          'server_error',
      );
    }
  });

  it('pages as the contract says: has_more agrees with total, offset and data', () => {
    let lists = 0;
    for (const [id, example] of everyExample()) {
      walk({ example }, (_key, value, path) => {
        if (!isList(value)) return;
        lists += 1;
        expect(value.has_more, `${id}${path}`).toBe(value.offset + value.data.length < value.total);
        expect(value.data.length, `${id}${path}`).toBeLessThanOrEqual(value.limit);
        expect(value.total, `${id}${path}`).toBeGreaterThanOrEqual(value.offset + value.data.length);
      });
    }
    expect(lists).toBeGreaterThan(10);
    for (const [id, op] of operations) {
      const response = operationExamples[id].response;
      const limit = operationExamples[id].request.query?.limit;
      if (isList(response) && limit !== undefined) expect(response.limit, id).toBe(limit);
      if (isList(response) && op.method === 'GET')
        expect(response.data.length, `${id} lists nothing`).toBeGreaterThan(0);
    }
  });

  it('sends a message that is outbound and queued, with no error and no platform id yet', () => {
    expect(operationExamples['messages.send'].response).toMatchObject({
      direction: 'outbound',
      status: 'queued',
      error: null,
      platform_message_id: null,
      conversation_id: operationExamples['messages.send'].request.body?.conversation_id,
    });
    expect(operationExamples['sandbox.inbound'].response).toMatchObject({ direction: 'inbound', error: null });
  });

  it('answers a change with the record it changed: what the request sent, under the id the path names', () => {
    for (const [id, op] of operations) {
      const { params, body } = operationExamples[id].request;
      const response = operationExamples[id].response as Json | undefined;
      if (!response || isList(response)) continue;
      for (const [field, sent] of Object.entries(body ?? {})) {
        if (field in response) expect(same(sent, response[field]), `${id} ${field}`).toBe(true);
      }
      const pathId = params?.id;
      const prefix = (value: unknown) => String(value).split('_')[0];
      if (pathId && typeof response.id === 'string' && prefix(response.id) === prefix(pathId))
        expect(response.id, id).toBe(pathId);
      if (op.method === 'PATCH') expect(Object.keys(body ?? {}).length, id).toBeGreaterThan(0);
    }
    expect(operationExamples['tags.update'].response).toEqual({
      name: operationExamples['tags.update'].request.body?.name,
      contact_count: 1,
    });
    const removed = operationExamples['contacts.tags.remove'];
    expect((removed.response as { tags: string[] }).tags).not.toContain(removed.request.params?.tag);
    const added = operationExamples['contacts.tags.add'];
    expect((added.response as { tags: string[] }).tags).toContain(added.request.body?.tag);
  });

  it('computes order totals from real items at real prices', () => {
    for (const [id, example] of everyExample()) {
      walk({ example }, (key, value, path) => {
        if (key !== 'items' || !Array.isArray(value)) return;
        const items = value as { name: string; quantity: number; unit_amount: number }[];
        for (const item of items) expect(item.unit_amount, `${id}${path}`).toBeGreaterThanOrEqual(100);
        const order = JSON.parse(JSON.stringify({ example })) as Json;
        const parent = path
          .split('.')
          .slice(1, -1)
          .reduce<unknown>((at, step) => (at as Json)[step], order) as Json;
        if ('total_amount' in parent)
          expect(parent.total_amount, `${id}${path}`).toBe(
            items.reduce((sum, item) => sum + item.quantity * item.unit_amount, 0),
          );
      });
    }
  });

  it('gives every id the prefix of its kind', () => {
    const prefixes = Object.values(ID_PREFIXES).join('|');
    let ids = 0;
    for (const [id, example] of everyExample()) {
      walk({ example }, (key, value, path) => {
        if (typeof value !== 'string') return;
        if (key === 'id' && !path.includes('.media.')) {
          ids += 1;
          expect(value, `${id}${path}`).toMatch(new RegExp(`^(?:${prefixes})_${ULID}$`));
        }
        const kind = ID_FIELDS[key];
        if (kind) {
          ids += 1;
          expect(value, `${id}${path}`).toMatch(new RegExp(`^${ID_PREFIXES[kind]}_${ULID}$`));
        }
      });
    }
    expect(ids).toBeGreaterThan(50);
  });

  it('holds no placeholder: no "example", "string" or "Ana Souza" standing for a value', () => {
    const placeholder = /^(?:example|string|foo|bar|baz|test|lorem.*|x+|1)$/i;
    for (const [id, example] of everyExample()) {
      walk({ example }, (key, value, path) => {
        if (typeof value !== 'string') return;
        expect(value, `${id}${path}`).not.toMatch(placeholder);
        expect(value, `${id}${path}`).not.toContain('Ana Souza');
        // Only as a reserved domain (RFC 2606), which never receives a webhook or an e-mail.
        const word = value.replace(/@example\.com$/, '').replace(/\.example(?=\/|$)/, '');
        expect(word, `${id}${path} (${key})`).not.toMatch(/example/i);
      });
    }
  });

  it("puts each operation's example in the document, with the serving server's address", () => {
    const doc = buildOpenApiDocument({ serverUrl: 'https://api.tostado.example/v1' });
    type Operation = {
      parameters: { name?: string; in?: string; example?: unknown }[];
      requestBody?: { content: { 'application/json': { example?: unknown } } };
      responses: Record<
        string,
        {
          content?: {
            'application/json': { example?: unknown; examples?: Record<string, { $ref: string }> };
            'text/event-stream'?: { example?: unknown };
          };
        }
      >;
    };
    const served = JSON.stringify(doc);
    expect(served).not.toContain(STORY_ORIGIN);
    for (const [id, op] of operations) {
      const operation = (doc.paths[`/v1${toOpenApiPath(op.path)}`] as Record<string, Operation>)[
        op.method.toLowerCase()
      ] as Operation;
      const example = JSON.parse(
        JSON.stringify(operationExamples[id]).replaceAll(STORY_ORIGIN, 'https://api.tostado.example'),
      ) as (typeof operationExamples)[OperationId];
      const given = Object.fromEntries(
        operation.parameters.filter((p) => p.in === 'path' || p.in === 'query').map((p) => [p.name, p.example]),
      );
      for (const [name, value] of Object.entries({ ...example.request.params, ...example.request.query }))
        expect(given[name], `${id} ${name}`).toEqual(value);
      if (!op.upload)
        expect(operation.requestBody?.content['application/json'].example, id).toEqual(example.request.body);
      for (const [status, response] of Object.entries(operation.responses)) {
        const media = response.content?.['application/json'];
        // A download answers bytes (or 304), of which there is no JSON example.
        if (op.download && (status === String(op.status) || status === '304')) continue;
        if (op.stream && status === String(op.status)) {
          const event = example.response as { id: string; type: string };
          expect(response.content?.['text/event-stream']?.example, id).toBe(sseFrameOf(event));
          continue;
        }
        if (status === String(op.status)) {
          expect(media?.example, `${id} ${status}`).toEqual(example.response);
          continue;
        }
        const refs = Object.values(media?.examples ?? {}).map((e) => e.$ref.split('/').pop() as string);
        expect(refs, `${id} ${status}`).toHaveLength(1);
        expect(doc.components.examples[refs[0] as string]?.value, `${id} ${status}`).toEqual(
          errorExamples[Number(status) as keyof typeof errorExamples],
        );
      }
    }
  });
});
