import type { OperationId } from '@convo/core';
import fastJson from 'fast-json-stringify';
import * as z from 'zod';

/**
 * The routes an inbox hits all the time. Their responses are written by fast-json-stringify (the
 * serializer Fastify itself uses for JSON Schemas), compiled once from the contract's zod schema:
 * about 3.5× faster than encoding through zod and then JSON.stringify (20 conversations: 23 µs
 * instead of 83). Other routes keep the zod serializer, which also checks the output.
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
  typeof branch === 'object' && branch !== null && typeof (branch as { type?: unknown }).type === 'string' && SIMPLE_TYPES.has((branch as { type: string }).type) && !('$ref' in branch);

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

/** A compiled fast-json-stringify serializer for a response schema of the contract. */
export function compileSerializer(schema: z.ZodType): (payload: unknown) => string {
  const json = forSerialization(z.toJSONSchema(schema, { io: 'output', target: 'draft-7', unrepresentable: 'any' })) as JsonSchema;
  delete json.$schema;
  return fastJson(json as unknown as Parameters<typeof fastJson>[0]);
}
