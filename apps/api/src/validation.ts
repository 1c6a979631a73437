import type { Constraint, EndpointDefinition, ValidationIssue } from '@convo/core';
import * as z from 'zod';
import { ApiError } from './errors.js';

type Issue = z.core.$ZodIssue;

/**
 * Parses `input` with a contract schema; on failure throws one ApiError whose details name the
 * first problem's field and constraint and list every problem in `issues`.
 * `pathPrefix` is dropped from field paths (`body.tags.2` → `tags.2`).
 */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown, pathPrefix: readonly PropertyKey[] = []): z.output<S> {
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
        // A discriminated union (workflow steps) whose tag matches no option. zod 4 already puts
        // the tag in the path (`steps.0.type`); the check keeps that true if it ever stops doing so.
        const path = lastSegment(issue.path) === discriminator ? issue.path : [...issue.path, discriminator];
        const value = valueAt(input, path);
        const options = ('options' in issue ? (issue.options as unknown[]) : []) ?? [];
        const constraint: Constraint = value === undefined ? 'required' : options.some((option) => typeof option === typeof value) ? 'enum' : 'type';
        const name = path.map(String).join('.');
        const message =
          constraint === 'required' ? `${name} is required` : `${name} must be one of: ${options.map((option) => JSON.stringify(option)).join(', ')}`;
        out.push({ field: fieldName(path, dropSegments), constraint, message });
        continue;
      }
      const allowed = unionOfValues(issue);
      if (allowed) {
        // A union of enums and literals (a webhook's events: a type or "*"): one enum of them all.
        const value = valueAt(input, issue.path);
        const constraint: Constraint = value === undefined ? 'required' : allowed.some((v) => typeof v === typeof value) ? 'enum' : 'type';
        const name = issue.path.map(String).join('.');
        const message = constraint === 'required' ? `${name} is required` : `${name} must be one of: ${allowed.map((v) => JSON.stringify(v)).join(', ')}`;
        out.push({ field: fieldName(issue.path, dropSegments), constraint, message });
        continue;
      }
      // A union of value types (attributes): report the value's type as wrong.
      out.push({ field: fieldName(issue.path, dropSegments), constraint: 'type', message: 'Invalid value type' });
      continue;
    }
    const constraint = constraintOf(issue, valueAt(input, issue.path));
    out.push({ field: fieldName(issue.path, dropSegments), constraint, message: messageOf(issue, constraint) });
  }
  return out;
}

/**
 * The allowed values when every option of a failed union is an enum or a literal that rejected
 * the value itself; undefined for any other union.
 */
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
      // An enum reports a missing value and a value of the wrong type as such, like every other field.
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
      return issue.code === 'invalid_type' ? `${name} must be ${issue.expected === 'int' ? 'an integer' : `of type ${issue.expected}`}` : issue.message;
    case 'enum':
      return issue.code === 'invalid_value' ? `${name} must be one of: ${issue.values.map((v) => JSON.stringify(v)).join(', ')}` : issue.message;
    case 'max_length':
    case 'max':
      if (issue.code === 'too_big')
        return `${name} must ${issue.origin === 'string' ? 'have at most' : issue.origin === 'array' ? 'hold at most' : 'be at most'} ${issue.maximum}${issue.origin === 'string' ? ' characters' : issue.origin === 'array' ? ' items' : ''}`;
      return issue.message;
    case 'min_length':
    case 'min':
      if (issue.code === 'too_small')
        return `${name} must ${issue.origin === 'string' ? 'have at least' : issue.origin === 'array' ? 'hold at least' : 'be at least'} ${issue.minimum}${issue.origin === 'string' ? ' characters' : issue.origin === 'array' ? ' items' : ''}`;
      return issue.message;
    default:
      return issue.message ? `${name}: ${issue.message}` : `${name} is invalid`;
  }
}

const lastSegment = (path: readonly PropertyKey[]): string | undefined => {
  const last = path[path.length - 1];
  return last === undefined ? undefined : String(last);
};

/**
 * Postgres cannot store U+0000 in text (nor look it up), and both databases must answer alike: no
 * string of a request, value or name, may hold it (400 `pattern` naming where it is).
 */
export function nulIssues(value: unknown, path: string[] = []): ValidationIssue[] {
  if (!holdsNul(value)) return [];
  const issue = (at: string[]): ValidationIssue => {
    const field = at.join('.') || 'body';
    return { field, constraint: 'pattern', message: `${field} must not contain the character U+0000` };
  };
  if (typeof value === 'string') return [issue(path)];
  if (Array.isArray(value)) return value.flatMap((inner, i) => nulIssues(inner, [...path, String(i)]));
  return Object.entries(value as object).flatMap(([key, inner]) => (key.includes('\u0000') ? [issue([...path, key])] : nulIssues(inner, [...path, key])));
}

/** Whether any string in a value, or any key, holds U+0000 (allocating nothing). */
function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (!value || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some(holdsNul);
  for (const key in value) {
    if (Object.hasOwn(value, key) && (key.includes('\u0000') || holdsNul((value as Record<string, unknown>)[key]))) return true;
  }
  return false;
}

/**
 * Validates one part of a request (params, query or body) against its contract schema: the parsed
 * value, or one ApiError naming every problem (U+0000 included).
 */
export function validatePart<S extends z.ZodType>(schema: S, value: unknown): { value: z.output<S> } | { error: ApiError } {
  const result = schema.safeParse(value);
  const issues = [...(result.success ? [] : toValidationIssues(result.error.issues, value)), ...nulIssues(value)];
  if (issues.length > 0) return { error: ApiError.validation(issues) };
  return { value: (result as { data: z.output<S> }).data };
}

const NO_QUERY = z.strictObject({});

/** The schema of an operation's query string: operations without parameters still refuse unknown ones (400 `unknown`). */
export const querySchemaOf = (operation: EndpointDefinition): z.ZodType => operation.query ?? NO_QUERY;
