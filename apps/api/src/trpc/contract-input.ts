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
  // fromEntries defines every name as an own property: `?__proto__=1` stays a parameter (an
  // unknown one), where an assignment would set the object's prototype and lose it.
  return Object.fromEntries(
    Object.entries(query).map(([key, value]) => [
      key,
      // `?limit=10` → 10; anything that is not a plain decimal stays a string and fails as `type`.
      numeric.has(key) && typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value,
    ]),
  );
}

/**
 * Postgres cannot store U+0000 in text (nor look it up), and both databases must answer alike: no
 * string of a request, value or name, may hold it (400 `pattern` naming where it is).
 */
function nulIssues(value: unknown, path: string[] = []): ValidationIssue[] {
  const issue = (at: string[]): ValidationIssue => {
    const field = at.join('.') || 'body';
    return { field, constraint: 'pattern', message: `${field} must not contain the character U+0000` };
  };
  if (typeof value === 'string') return value.includes('\u0000') ? [issue(path)] : [];
  if (Array.isArray(value)) return value.flatMap((inner, i) => nulIssues(inner, [...path, String(i)]));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, inner]) => (key.includes('\u0000') ? [issue([...path, key])] : nulIssues(inner, [...path, key])));
  }
  return [];
}

/** Whether any string in a value, or any key, holds U+0000 (nulIssues names them; this only looks, allocating nothing). */
function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (!value || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some(holdsNul);
  for (const key in value) {
    if (Object.hasOwn(value, key) && (key.includes('\u0000') || holdsNul((value as Record<string, unknown>)[key]))) return true;
  }
  return false;
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
    if (holdsNul(input.params) || holdsNul(query) || holdsNul(body)) issues.push(...nulIssues(input.params), ...nulIssues(query), ...nulIssues(body));
    if (issues.length) throw ApiError.validation(issues);
    return out as OperationParsedInput<K>;
  };
  return { parse, _input: undefined as unknown as OperationInput<K>, _output: undefined as unknown as OperationParsedInput<K> };
}
