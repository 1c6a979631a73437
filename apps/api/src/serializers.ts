import { type EndpointDefinition, type OperationId, endpoints } from '@convo/core';
import fastJson from 'fast-json-stringify';
import * as z from 'zod';

/**
 * The routes an inbox hits all the time. Their responses are written by fast-json-stringify (the
 * serializer Fastify itself uses for JSON Schemas), compiled once from the contract's zod schema,
 * several times faster than encoding through zod and then JSON.stringify (README's dependency
 * table). Other routes keep the zod serializer, which also checks the output.
 */
export const HOT_OPERATIONS: ReadonlySet<OperationId> = new Set<OperationId>([
  'conversations.list',
  'conversations.retrieve',
  'conversations.listMessages',
  'messages.send',
  'contacts.list',
  'contacts.retrieve',
]);

type JsonSchema = { [key: string]: unknown };

const SIMPLE_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);
const isSimple = (branch: unknown): branch is { type: string } =>
  typeof branch === 'object' &&
  branch !== null &&
  typeof (branch as { type?: unknown }).type === 'string' &&
  SIMPLE_TYPES.has((branch as { type: string }).type) &&
  !('$ref' in branch);

/**
 * The schema as fast-json-stringify serializes it best: `anyOf` of an object or array and `null`
 * becomes the object or array `nullable`, and `anyOf` of plain scalar types becomes a type list,
 * so no branch has to be chosen by validation at run time. Output bytes are unchanged.
 */
export function forSerialization(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(forSerialization);
  if (typeof node !== 'object' || node === null) return node;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) out[key] = forSerialization(value);
  const anyOf = out.anyOf;
  if (Array.isArray(anyOf)) {
    if (anyOf.every(isSimple)) {
      delete out.anyOf;
      out.type = [...new Set(anyOf.map((branch) => branch.type))];
    } else if (anyOf.length === 2 && anyOf.some((branch) => isSimple(branch) && branch.type === 'null')) {
      const other = anyOf.find((branch) => !(isSimple(branch) && branch.type === 'null')) as JsonSchema;
      delete out.anyOf;
      Object.assign(out, other, { nullable: true });
    }
  }
  return out;
}

/** Whether a JSON Schema has a record somewhere: an object whose other keys are allowed. */
function hasRecord(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(hasRecord);
  if (typeof node !== 'object' || node === null) return false;
  const additional = (node as JsonSchema).additionalProperties;
  if (additional !== undefined && additional !== false) return true;
  return Object.values(node).some(hasRecord);
}

/**
 * The value without any own `__proto__` key, copying only the objects that have one. zod leaves
 * such a key out of a record's output (JSON.parse makes it an own property); fast-json-stringify
 * would write it.
 */
function withoutProtoKeys(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(withoutProtoKeys);
    return items.some((item, i) => item !== value[i]) ? items : value;
  }
  if (typeof value !== 'object' || value === null) return value;
  let changed = Object.hasOwn(value, '__proto__');
  const entries = Object.entries(value)
    .filter(([key]) => key !== '__proto__')
    .map(([key, inner]) => {
      const cleaned = withoutProtoKeys(inner);
      if (cleaned !== inner) changed = true;
      return [key, cleaned] as const;
    });
  return changed ? Object.fromEntries(entries) : value;
}

/** A compiled fast-json-stringify serializer for a response schema of the contract. */
export function compileSerializer(schema: z.ZodType): (payload: unknown) => string {
  const json = forSerialization(
    z.toJSONSchema(schema, { io: 'output', target: 'draft-7', unrepresentable: 'any' }),
  ) as JsonSchema;
  delete json.$schema;
  const serialize = fastJson(json as unknown as Parameters<typeof fastJson>[0]);
  // Only schemas with a record (contact attributes) can carry such a key.
  return hasRecord(json) ? (payload) => serialize(withoutProtoKeys(payload)) : serialize;
}

const serializers = new Map<OperationId, (result: unknown) => string>();

/**
 * The body of an operation's success response, exactly as both transports send it (and as an
 * idempotent request stores it): checked against the response schema of the contract, except
 * for the HOT_OPERATIONS, whose compiled serializer writes only the schema's fields.
 */
export function serializeResponse(operationId: OperationId, result: unknown): string {
  let serialize = serializers.get(operationId);
  if (!serialize) {
    const operation: EndpointDefinition = endpoints[operationId];
    const schema = operation.response;
    if (!schema) throw new Error(`${operationId} answers no body`);
    serialize = HOT_OPERATIONS.has(operationId)
      ? compileSerializer(schema)
      : (value) => JSON.stringify(z.encode(schema, value));
    serializers.set(operationId, serialize);
  }
  return serialize(result);
}
