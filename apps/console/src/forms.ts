import { zodResolver } from '@hookform/resolvers/zod';
import type { FieldValues, Resolver } from 'react-hook-form';
import type * as z from 'zod';

/**
 * A form validated by a contract schema of @convo/core, the one the server validates with. Text
 * inputs always hold a string, so the optional fields left empty are dropped before validation
 * (and so never sent as "").
 */
export function contractResolver<F extends FieldValues, Out>(
  schema: z.ZodType<Out>,
  optional: readonly (keyof F & string)[],
): Resolver<F, unknown, Out> {
  const resolve = zodResolver(schema as z.ZodType<Out, F>) as unknown as Resolver<F, unknown, Out>;
  return (values, context, options) => {
    const filled = Object.fromEntries(
      Object.entries(values).filter(
        ([name, value]) => !(optional.includes(name) && typeof value === 'string' && value.trim() === ''),
      ),
    ) as F;
    return resolve(filled, context, options);
  };
}
