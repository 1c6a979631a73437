/**
 * The fields of each choice of `anyOf: [{required: [a]}, {required: [b]}]` (one of these fields is needed), or
 * undefined for a real union of types, which examples, /docs and the SDK's types treat differently.
 */
export function requiredAlternatives(schema: Record<string, unknown>): string[][] | undefined {
  const variants = (schema.anyOf ?? schema.oneOf) as Record<string, unknown>[] | undefined;
  if (!variants?.every((v) => Array.isArray(v.required) && Object.keys(v).length === 1)) return undefined;
  return variants.map((v) => v.required as string[]);
}
