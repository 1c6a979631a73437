/**
 * `anyOf: [{required: [a]}, {required: [b]}]` beside an object's properties: one of these fields
 * is needed (zod's refinement, as JSON Schema writes it). The fields of each choice, or undefined
 * when the schema's union is a real one. The OpenAPI examples, /docs and the SDK's generated
 * types each treat it apart from a union of types.
 */
export function requiredAlternatives(schema: Record<string, unknown>): string[][] | undefined {
  const variants = (schema.anyOf ?? schema.oneOf) as Record<string, unknown>[] | undefined;
  if (!variants?.every((v) => Array.isArray(v.required) && Object.keys(v).length === 1)) return undefined;
  return variants.map((v) => v.required as string[]);
}
