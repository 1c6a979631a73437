import { describe, expect, it } from 'vitest';
import packageJson from '../package.json' with { type: 'json' };
import {
  CONTRACT_VERSION,
  type EndpointDefinition,
  MAX_TAGS_PER_CONTACT,
  REQUEST_TEXT_PATTERN,
  buildOpenApiDocument,
  endpoints,
  toOpenApiPath,
} from './index.js';

describe('buildOpenApiDocument', () => {
  const doc = buildOpenApiDocument();

  it('lists exactly the operations of the endpoint table, under /v1 with {param} paths, and the Meta webhook routes outside it', () => {
    const listed = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
    );
    const expected = Object.values(endpoints).map((op) => `${op.method} /v1${toOpenApiPath(op.path)}`);
    expect(listed.sort()).toEqual(
      [...expected, 'GET /hooks/meta/{channel_id}', 'POST /hooks/meta/{channel_id}'].sort(),
    );
    const hooks = buildOpenApiDocument({ exclude: ['hooks'] });
    expect(Object.keys(hooks.paths).filter((path) => !path.startsWith('/v1/'))).toEqual([]);
  });

  it('resolves every $ref to a component', () => {
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const ref of refs) {
      const [, , section, name] = ref.slice(8, -1).split('/');
      expect(
        (doc.components as Record<string, Record<string, unknown>>)[section as string]?.[name as string],
        ref,
      ).toBeDefined();
    }
  });

  it('describes the request and response of an operation from its schemas', () => {
    const create = doc.paths['/v1/contacts']?.post as {
      requestBody: { content: { 'application/json': { schema: { $ref: string } } } };
      responses: Record<string, unknown>;
    };
    expect(create.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/CreateContactBody');
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', '429', '500']));
    const body = doc.components.schemas.CreateContactBody as {
      required: string[];
      additionalProperties: boolean;
      properties: Record<string, { format?: string }>;
    };
    expect(body.required).toEqual(['phone']);
    expect(body.additionalProperties).toBe(false);
    expect(body.properties.phone?.format).toBe('e164');
  });

  it("gives the contract's version, which is the packages' version", () => {
    expect(doc.info.version).toBe(CONTRACT_VERSION);
    expect(CONTRACT_VERSION).toBe(packageJson.version);
  });

  it('names the server only when told where it is, without the /v1 the paths carry', () => {
    expect(doc).not.toHaveProperty('servers');
    expect(buildOpenApiDocument({ serverUrl: 'https://api.example.com/v1/' }).servers).toEqual([
      { url: 'https://api.example.com' },
    ]);
    expect(buildOpenApiDocument({ serverUrl: 'http://localhost:4100' }).servers).toEqual([
      { url: 'http://localhost:4100' },
    ]);
  });

  it('documents the headers: Idempotency-Key on every POST, the request id and rate-limit state on responses, Retry-After on 429', () => {
    type Operation = {
      parameters: { $ref?: string }[];
      responses: Record<string, { headers?: Record<string, { $ref: string }> }>;
    };
    for (const [operationId, op] of Object.entries(endpoints)) {
      const operation = (doc.paths[`/v1${toOpenApiPath(op.path)}`] as Record<string, Operation>)[
        op.method.toLowerCase()
      ] as Operation;
      const refs = operation.parameters.map((p) => p.$ref);
      expect(refs.includes('#/components/parameters/Idempotency-Key'), operationId).toBe(op.method === 'POST');
      expect(refs, operationId).toContain('#/components/parameters/X-Request-Id');
      for (const [status, response] of Object.entries(operation.responses)) {
        const headers = Object.keys(response.headers ?? {});
        expect(headers, `${operationId} ${status}`).toContain('X-Request-Id');
        const rateLimited = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];
        if (status === '401') expect(headers, `${operationId} ${status}`).not.toContain('X-RateLimit-Limit');
        else expect(headers, `${operationId} ${status}`).toEqual(expect.arrayContaining(rateLimited));
        expect(headers.includes('Retry-After'), `${operationId} ${status}`).toBe(status === '429');
      }
    }
    const idempotencyKey = doc.components.parameters['Idempotency-Key'];
    expect(idempotencyKey).toMatchObject({ in: 'header', required: false, schema: { type: 'string', maxLength: 255 } });
  });

  it('gives every operation an example of its body and of its answer, which the contract accepts', () => {
    type Media = { example?: unknown };
    type Operation = {
      requestBody?: { content: { 'application/json': Media } };
      responses: Record<string, { content?: { 'application/json': Media; 'text/event-stream': Media } }>;
    };
    for (const [operationId, op] of Object.entries(endpoints as Record<string, EndpointDefinition>)) {
      const operation = (doc.paths[`/v1${toOpenApiPath(op.path)}`] as Record<string, Operation>)[
        op.method.toLowerCase()
      ] as Operation;
      if (op.upload) {
        // A file is no JSON value to show: the part is described as binary instead.
        const content = (operation.requestBody?.content ?? {}) as Record<string, { schema: unknown }>;
        const media = content['multipart/form-data'];
        const ref = (media?.schema as { $ref?: string } | undefined)?.$ref ?? '';
        const schema = JSON.stringify(doc.components.schemas[ref.split('/').pop() as string]);
        expect(schema, `${operationId} body`).toContain('"format":"binary"');
      } else if (op.body) {
        const example = operation.requestBody?.content['application/json'].example;
        expect(example, `${operationId} body`).toBeDefined();
        expect(op.body.safeParse(example).error, `${operationId} body`).toBeUndefined();
      }
      if (op.stream) {
        // One event as the stream sends it: its data line holds an answer the contract accepts.
        const example = String(operation.responses[op.status]?.content?.['text/event-stream'].example);
        const data = /^id: evt_\w+\nevent: [\w.]+\ndata: (.*)\n\n$/.exec(example)?.[1];
        expect(data, `${operationId} response`).toBeDefined();
        expect(op.response?.safeParse(JSON.parse(data as string)).error, `${operationId} response`).toBeUndefined();
      } else if (op.response && !op.download) {
        const example = operation.responses[op.status]?.content?.['application/json'].example;
        expect(example, `${operationId} response`).toBeDefined();
        expect(op.response.safeParse(example).error, `${operationId} response`).toBeUndefined();
      }
    }
  });

  it('lists a 404 only where one can happen: a record in the path, or one the body names', () => {
    const statuses = (path: string, method: string) =>
      Object.keys((doc.paths[path] as Record<string, { responses: object }>)[method]?.responses ?? {});
    expect(statuses('/v1/contacts', 'get')).not.toContain('404');
    expect(statuses('/v1/contacts', 'post')).not.toContain('404');
    expect(statuses('/v1/webhook_endpoints', 'post')).not.toContain('404');
    for (const [path, method] of [
      ['/v1/contacts/{id}', 'get'],
      ['/v1/orders', 'post'],
      ['/v1/conversations', 'post'],
      ['/v1/messages', 'post'],
    ] as const) {
      expect(statuses(path, method), `${method} ${path}`).toContain('404');
    }
  });

  it('says in every request schema what the server refuses in any string: U+0000, a lone surrogate, a __proto__ key', () => {
    // The same answers with the `u` flag (as JSON Schema validators use it) and without.
    for (const flags of ['u', '']) {
      const text = new RegExp(REQUEST_TEXT_PATTERN, flags);
      for (const good of ['', 'plain', 'café', '😀 emoji', '\ud83d\ude00', 'a\u0001b', '\uffff'])
        expect(text.test(good), `${JSON.stringify(good)} /${flags}`).toBe(true);
      for (const bad of ['\u0000', 'a\u0000', 'fz\ud800', '\udfff', '\ude00\ud83d', 'a\ud83d'])
        expect(text.test(bad), `${JSON.stringify(bad)} /${flags}`).toBe(false);
    }
    type Json = Record<string, unknown>;
    const strings: string[] = [];
    const maps: Json[] = [];
    const visit = (value: unknown, at: string): void => {
      if (Array.isArray(value)) {
        for (const [i, inner] of value.entries()) visit(inner, `${at}.${i}`);
        return;
      }
      if (!value || typeof value !== 'object') return;
      const schema = value as Json;
      const types = Array.isArray(schema.type) ? schema.type : [schema.type];
      if (
        types.includes('string') &&
        schema.format === undefined &&
        schema.enum === undefined &&
        schema.const === undefined
      ) {
        if (schema.pattern !== REQUEST_TEXT_PATTERN && typeof schema.pattern !== 'string') strings.push(at);
      }
      if (schema.additionalProperties && typeof schema.additionalProperties === 'object') maps.push(schema);
      for (const [key, inner] of Object.entries(schema))
        if (key !== 'example' && key !== 'default') visit(inner, `${at}.${key}`);
    };
    const requestComponents = new Set<string>();
    for (const [path, methods] of Object.entries(doc.paths).filter(([path]) => path.startsWith('/v1/'))) {
      for (const [method, operation] of Object.entries(methods as Record<string, Json>)) {
        visit(operation.parameters, `${method} ${path} parameters`);
        visit(operation.requestBody, `${method} ${path} body`);
        for (const ref of JSON.stringify(operation.requestBody ?? {}).match(/#\/components\/schemas\/\w+/g) ?? [])
          requestComponents.add(ref.split('/').pop() as string);
      }
    }
    for (const name of requestComponents) visit(doc.components.schemas[name], name);
    expect(strings, 'request strings without the text pattern').toEqual([]);
    expect(maps.length).toBeGreaterThan(0);
    for (const map of maps) expect(map.propertyNames).toMatchObject({ not: { const: '__proto__' } });
    const list = doc.paths['/v1/contacts']?.get as { parameters: { name?: string; schema?: Json }[] } | undefined;
    const search = list?.parameters.find((p) => p.name === 'search');
    expect(search?.schema?.pattern).toBe(REQUEST_TEXT_PATTERN);
    // Only requests: an error message may quote what was refused.
    for (const name of ['Error', 'Contact', 'Message'])
      expect(JSON.stringify(doc.components.schemas[name]), name).not.toContain(JSON.stringify(REQUEST_TEXT_PATTERN));
    expect(JSON.stringify(doc.components.schemas.CreateContactBody)).toContain(JSON.stringify(REQUEST_TEXT_PATTERN));
    expect(doc.info.description).toContain('lone surrogate');
    const create = doc.paths['/v1/contacts']?.post as
      | { responses: Record<string, { description: string }> }
      | undefined;
    expect(create?.responses['400']?.description).toContain('lone surrogate');
  });

  it("lists each operation's refusals beyond the schema under its 400, as text and as x-refusals", () => {
    type Response = { description: string; 'x-refusals'?: unknown };
    const responsesOf = (path: string, method: string) =>
      (doc.paths[path]?.[method] as { responses: Record<string, Response> } | undefined)?.responses ?? {};
    const send = responsesOf('/v1/messages', 'post')['400'];
    expect(send?.['x-refusals']).toEqual(endpoints['messages.send'].refusals);
    expect(send?.description).toContain('- `type`, `window`: ');
    expect(send?.description).toContain(
      '- `template.language`, `enum`: The template exists, but not in this language.',
    );
    // Only the 400, and only where there are some.
    expect(responsesOf('/v1/messages', 'post')['404']?.['x-refusals']).toBeUndefined();
    expect(responsesOf('/v1/contacts', 'get')['400']).not.toHaveProperty('x-refusals');
    expect(responsesOf('/v1/contacts/{id}/tags', 'post')['400']?.description).toContain(
      `The contact already has ${MAX_TAGS_PER_CONTACT} tags.`,
    );
  });

  it('leaves out excluded operations', () => {
    const trimmed = buildOpenApiDocument({ exclude: ['orders.create'] });
    expect(trimmed.paths['/v1/orders']?.post).toBeUndefined();
    expect(trimmed.paths['/v1/orders']?.get).toBeDefined();
  });
});
