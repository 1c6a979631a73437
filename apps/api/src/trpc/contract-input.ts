import type { EndpointDefinition, OperationId, OperationInput, OperationParsedInput } from '@convo/core';
import type { ValidationIssue } from '@convo/core';
import * as z from 'zod';
import { ApiError } from '../errors.js';
import { RawBody } from '../http/raw-body.js';
import { toValidationIssues } from '../validation.js';

/**
 * Input of a REST request as Fastify hands it over: path parameters, the query string as
 * strings, and the undecoded body. The procedure's parser decodes it, so the same procedure
 * also serves `/trpc`, whose callers send typed values.
 */
export class HttpInput {
  constructor(
    readonly params: unknown,
    readonly query: unknown,
    readonly body: RawBody | undefined,
  ) {}
}

/** Query parameters the schema wants as numbers: their strings are converted before parsing. */
function numericKeys(schema: z.ZodType | undefined): Set<string> {
  if (!schema) return new Set();
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as { properties?: Record<string, { type?: string }> };
  return new Set(
    Object.entries(json.properties ?? {})
      .filter(([, p]) => p.type === 'integer' || p.type === 'number')
      .map(([k]) => k),
  );
}

function coerceQuery(query: unknown, numeric: Set<string>): unknown {
  if (!query || typeof query !== 'object') return {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query)) {
    // `?limit=10` → 10; anything that is not a plain decimal stays a string and fails as `type`.
    out[key] = numeric.has(key) && typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;
  }
  return out;
}

/** Operations without query parameters still reject unknown ones (CONTRACT: 400 `unknown`). */
const NO_QUERY = z.strictObject({});

/**
 * The tRPC input parser of one operation: validates params, query and body against the
 * contract and throws one ApiError naming every problem. Typed for tRPC clients as the
 * operation's input and parsed input.
 */
export function contractInput<K extends OperationId>(operation: EndpointDefinition) {
  const numeric = numericKeys(operation.query);
  const parse = (raw: unknown): OperationParsedInput<K> => {
    const input = (raw ?? {}) as { params?: unknown; query?: unknown; body?: unknown };
    const fromHttp = raw instanceof HttpInput;
    const query = fromHttp ? coerceQuery(input.query, numeric) : (input.query ?? {});
    const body = fromHttp ? (input.body as RawBody | undefined)?.decode() : input.body;

    const issues: ValidationIssue[] = [];
    const out: Record<string, unknown> = {};
    const part = (name: 'params' | 'query' | 'body', schema: z.ZodType | undefined, value: unknown) => {
      if (!schema) return;
      const result = schema.safeParse(value);
      if (result.success) out[name] = result.data;
      else issues.push(...toValidationIssues(result.error.issues, value));
    };
    part('params', operation.params, input.params ?? {});
    part('query', operation.query ?? NO_QUERY, query);
    part('body', operation.body, body === undefined ? {} : body);
    if (issues.length) throw ApiError.validation(issues);
    return out as OperationParsedInput<K>;
  };
  return { parse, _input: undefined as unknown as OperationInput<K>, _output: undefined as unknown as OperationParsedInput<K> };
}
