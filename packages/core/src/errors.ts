import * as z from 'zod';

/** The six error codes of /v1, and the HTTP status each one is sent with. */
export const ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  rate_limited: 429,
  server_error: 500,
} as const;
export type ErrorCode = keyof typeof ERROR_STATUS;
export const ErrorCode = z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]).meta({ id: 'ErrorCode' });

/** What a validation problem broke (`details.constraint`). */
export const CONSTRAINTS = [
  'required',
  'type',
  'enum',
  'format',
  'min',
  'max',
  'min_length',
  'max_length',
  'pattern',
  'unique',
  'unknown',
  'json',
  'content_type',
  'max_bytes',
  'transition',
  'idempotency_key',
  'window',
] as const;
export type Constraint = (typeof CONSTRAINTS)[number];
export const Constraint = z.enum(CONSTRAINTS).meta({ id: 'Constraint' });

export const ValidationIssue = z
  .object({
    field: z.string(),
    constraint: Constraint,
    message: z.string(),
  })
  .meta({ id: 'ValidationIssue' });
export type ValidationIssue = z.infer<typeof ValidationIssue>;

export const ErrorDetails = z
  .object({
    field: z.string().meta({
      description: 'Dot path of the offending field (`tags.2`), `body` for the body as a whole, or a header name.',
    }),
    constraint: Constraint,
    issues: z
      .array(ValidationIssue)
      .optional()
      .meta({ description: 'Every problem found, the first of which is `field`/`constraint`.' }),
    existing_id: z
      .string()
      .optional()
      .meta({ description: 'With `unique`: the id of the record that already holds the value.' }),
  })
  .meta({ id: 'ErrorDetails' });
export type ErrorDetails = z.infer<typeof ErrorDetails>;

export const ErrorBody = z
  .object({
    error: z.object({
      code: ErrorCode,
      message: z.string(),
      details: ErrorDetails.optional(),
    }),
  })
  .meta({ id: 'Error' });
export type ErrorBody = z.infer<typeof ErrorBody>;
