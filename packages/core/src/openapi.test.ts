import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument, endpoints, toOpenApiPath } from './index.js';

describe('buildOpenApiDocument', () => {
  const doc = buildOpenApiDocument();

  it('lists exactly the operations of the endpoint table, under /v1 with {param} paths', () => {
    const listed = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
    const expected = Object.values(endpoints).map((op) => `${op.method} /v1${toOpenApiPath(op.path)}`);
    expect(listed.sort()).toEqual(expected.sort());
  });

  it('resolves every $ref to a component', () => {
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const ref of refs) {
      const [, , section, name] = ref.slice(8, -1).split('/');
      expect((doc.components as Record<string, Record<string, unknown>>)[section as string]?.[name as string], ref).toBeDefined();
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

  it('leaves out excluded operations', () => {
    const trimmed = buildOpenApiDocument({ exclude: ['orders.create'] });
    expect(trimmed.paths['/v1/orders']?.post).toBeUndefined();
    expect(trimmed.paths['/v1/orders']?.get).toBeDefined();
  });
});
