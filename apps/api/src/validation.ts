import type { Constraint, EndpointDefinition, ValidationIssue } from '@convo/core';
import * as z from 'zod';
import { ApiError } from './errors.js';

type Issue = z.core.$ZodIssue;

/**
 * Parses `input` with a contract schema, or throws one ApiError listing every problem.
 * `pathPrefix` is dropped from field paths (`body.tags.2` → `tags.2`).
 */
export function parseWith<S extends z.ZodType>(
  schema: S,
  input: unknown,
  pathPrefix: readonly PropertyKey[] = [],
): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw ApiError.validation(toValidationIssues(result.error.issues, input, pathPrefix.length));
}

export function toValidationIssues(issues: readonly Issue[], input: unknown, dropSegments = 0): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const path = [...issue.path, key];
        out.push({ field: fieldName(path, dropSegments), constraint: 'unknown', message: `Unknown field "${key}"` });
      }
      continue;
    }
    if (issue.code === 'invalid_union') {
      const discriminator = 'discriminator' in issue ? (issue.discriminator as string | undefined) : undefined;
      if (discriminator !== undefined) {
        // A discriminated union whose tag matches no option; zod 4 already puts the tag in the path
        // (`steps.0.type`), and the check keeps that true if it ever stops doing so.
        const path = lastSegment(issue.path) === discriminator ? issue.path : [...issue.path, discriminator];
        const value = valueAt(input, path);
        const options = ('options' in issue ? (issue.options as unknown[]) : []) ?? [];
        const constraint: Constraint =
          value === undefined ? 'required' : options.some((option) => typeof option === typeof value) ? 'enum' : 'type';
        const name = path.map(String).join('.');
        const message =
          constraint === 'required'
            ? `${name} is required`
            : `${name} must be one of: ${options.map((option) => JSON.stringify(option)).join(', ')}`;
        out.push({ field: fieldName(path, dropSegments), constraint, message });
        continue;
      }
      const allowed = unionOfValues(issue);
      if (allowed) {
        // A union of enums and literals (a webhook's events: a type or "*"): one enum of them all.
        const value = valueAt(input, issue.path);
        const constraint: Constraint =
          value === undefined ? 'required' : allowed.some((v) => typeof v === typeof value) ? 'enum' : 'type';
        const name = issue.path.map(String).join('.');
        const message =
          constraint === 'required'
            ? `${name} is required`
            : `${name} must be one of: ${allowed.map((v) => JSON.stringify(v)).join(', ')}`;
        out.push({ field: fieldName(issue.path, dropSegments), constraint, message });
        continue;
      }
      // A union of value types (attributes): report the value's type as wrong.
      out.push({ field: fieldName(issue.path, dropSegments), constraint: 'type', message: 'Invalid value type' });
      continue;
    }
    if (issue.code === 'invalid_key') {
      // A record key its key schema refused: report that schema's problem at the key, not a generic `type`.
      const [inner] = issue.issues;
      if (inner) {
        const constraint = constraintOf(inner, issue.path[issue.path.length - 1]);
        out.push({
          field: fieldName(issue.path, dropSegments),
          constraint,
          message: messageOf({ ...inner, path: issue.path }, constraint),
        });
        continue;
      }
    }
    const constraint = constraintOf(issue, valueAt(input, issue.path));
    out.push({ field: fieldName(issue.path, dropSegments), constraint, message: messageOf(issue, constraint) });
  }
  return out;
}

/** The allowed values when every option of a failed union is an enum or literal; undefined otherwise. */
function unionOfValues(issue: Extract<Issue, { code: 'invalid_union' }>): unknown[] | undefined {
  const branches = issue.errors;
  if (branches.length === 0) return undefined;
  const values: unknown[] = [];
  for (const branch of branches) {
    const [only, ...rest] = branch;
    if (!only || rest.length > 0 || only.code !== 'invalid_value' || only.path.length > 0) return undefined;
    values.push(...only.values);
  }
  return values;
}

function fieldName(path: readonly PropertyKey[], drop: number): string {
  const field = path.slice(drop).map(String).join('.');
  return field === '' ? 'body' : field;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value: unknown = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function constraintOf(issue: Issue, value: unknown): Constraint {
  switch (issue.code) {
    case 'invalid_type':
      return value === undefined ? 'required' : 'type';
    case 'too_big':
      return issue.origin === 'string' ? 'max_length' : 'max';
    case 'too_small':
      return issue.origin === 'string' ? 'min_length' : 'min';
    case 'invalid_format':
      return issue.format === 'regex' ? 'pattern' : 'format';
    case 'invalid_value':
      // A missing value or one of the wrong type is reported as such, like every other field.
      if (value === undefined) return 'required';
      return issue.values.some((allowed) => typeof allowed === typeof value) ? 'enum' : 'type';
    case 'not_multiple_of':
      return 'type';
    case 'custom': {
      const constraint = (issue.params as { constraint?: Constraint } | undefined)?.constraint;
      return constraint ?? 'format';
    }
    default:
      return 'type';
  }
}

function messageOf(issue: Issue, constraint: Constraint): string {
  const name = issue.path.length ? issue.path.map(String).join('.') : 'value';
  switch (constraint) {
    case 'required':
      return `${name} is required`;
    case 'type':
      return issue.code === 'invalid_type'
        ? `${name} must be ${issue.expected === 'int' ? 'an integer' : `of type ${issue.expected}`}`
        : issue.message;
    case 'enum':
      return issue.code === 'invalid_value'
        ? `${name} must be one of: ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`
        : issue.message;
    case 'max_length':
    case 'max':
      if (issue.code === 'too_big') return `${name} must ${boundOf(issue.origin, 'at most', issue.maximum)}`;
      return issue.message;
    case 'min_length':
    case 'min':
      if (issue.code === 'too_small') return `${name} must ${boundOf(issue.origin, 'at least', issue.minimum)}`;
      return issue.message;
    default:
      return issue.message ? `${name}: ${issue.message}` : `${name} is invalid`;
  }
}

/** "have at least 1 character", "hold at most 20 items", "be at least 0": the unit agrees with the number. */
function boundOf(origin: string, bound: 'at least' | 'at most', limit: number | bigint): string {
  const unit = (singular: string) => ` ${singular}${Number(limit) === 1 ? '' : 's'}`;
  if (origin === 'string') return `have ${bound} ${limit}${unit('character')}`;
  if (origin === 'array' || origin === 'set') return `hold ${bound} ${limit}${unit('item')}`;
  return `be ${bound} ${limit}`;
}

const lastSegment = (path: readonly PropertyKey[]): string | undefined => {
  const last = path[path.length - 1];
  return last === undefined ? undefined : String(last);
};

/**
 * No string of a request, value or key, may hold U+0000 (Postgres cannot store it) or a lone surrogate (stored
 * as U+FFFD), so whatever is accepted reads back exactly as sent. Every string is checked, not each field.
 */
export const isValidText = (text: string): boolean =>
  !text.includes('\u0000') && (text as WellFormedString).isWellFormed();

/** Node 20 has String.prototype.isWellFormed, but the ES2023 lib the project compiles with does not declare it. */
type WellFormedString = string & { isWellFormed(): boolean };

/** zod drops an own `__proto__` key from a record's output unchecked, so the key is refused, not lost silently. */
const REFUSED_KEY = '__proto__';

/** A `pattern` problem for every string or key isValidText refuses, and for every `__proto__` key. */
export function textIssues(value: unknown, path: string[] = []): ValidationIssue[] {
  if (!holdsBadText(value)) return [];
  const issue = (at: string[], message: string): ValidationIssue => {
    const field = at.join('.') || 'body';
    return { field, constraint: 'pattern', message: `${field} ${message}` };
  };
  if (typeof value === 'string') return [issue(path, 'must be valid Unicode: no lone surrogate, no U+0000')];
  if (Array.isArray(value)) return value.flatMap((inner, i) => textIssues(inner, [...path, String(i)]));
  return Object.entries(value as object).flatMap(([key, inner]) => {
    if (!isValidText(key))
      return [
        issue([...path, key], 'is not a valid key: keys must be valid Unicode, with no lone surrogate and no U+0000'),
      ];
    if (key === REFUSED_KEY) return [issue([...path, key], 'is not accepted as a key')];
    return textIssues(inner, [...path, key]);
  });
}

/** Whether textIssues finds anything in a value (allocating nothing). */
function holdsBadText(value: unknown): boolean {
  if (typeof value === 'string') return !isValidText(value);
  if (!value || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some(holdsBadText);
  for (const key in value) {
    if (
      Object.hasOwn(value, key) &&
      (key === REFUSED_KEY || !isValidText(key) || holdsBadText((value as Record<string, unknown>)[key]))
    )
      return true;
  }
  return false;
}

/** Validates params, query or body against its contract schema: the parsed value, or one ApiError for every problem. */
export function validatePart<S extends z.ZodType>(
  schema: S,
  value: unknown,
): { value: z.output<S> } | { error: ApiError } {
  const result = schema.safeParse(value);
  const schemaIssues = result.success ? [] : toValidationIssues(result.error.issues, value);
  // A field zod already refused (`__proto__` in a strict object is `unknown`) is named once.
  const named = new Set(schemaIssues.map((issue) => issue.field));
  const issues = [...schemaIssues, ...textIssues(value).filter((issue) => !named.has(issue.field))];
  if (issues.length > 0) return { error: ApiError.validation(issues) };
  return { value: (result as { data: z.output<S> }).data };
}

const NO_QUERY = z.strictObject({});

/** An operation's query schema: operations without parameters still refuse unknown ones. */
export const querySchemaOf = (operation: EndpointDefinition): z.ZodType => operation.query ?? NO_QUERY;
