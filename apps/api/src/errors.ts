import {
  type Constraint,
  ERROR_STATUS,
  type ErrorBody,
  type ErrorCode,
  type ErrorDetails,
  type ValidationIssue,
} from '@convo/core';

/**
 * The server's one error type: each transport turns it into its own shape in one place (HTTP: `toErrorBody`).
 * Anything else thrown becomes `server_error`.
 */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails | undefined;
  /** Extra response headers (e.g. Retry-After). */
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, details?: ErrorDetails, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.details = details;
    this.headers = headers;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  static badRequest(
    field: string,
    constraint: Constraint,
    message: string,
    extra: Partial<ErrorDetails> = {},
  ): ApiError {
    return new ApiError('bad_request', message, { field, constraint, ...extra });
  }

  static validation(issues: ValidationIssue[]): ApiError {
    const [first] = issues;
    if (!first) return new ApiError('bad_request', 'Invalid request');
    const message =
      issues.length === 1
        ? first.message
        : `${first.message} (and ${issues.length - 1} more problem${issues.length > 2 ? 's' : ''})`;
    return new ApiError('bad_request', message, { field: first.field, constraint: first.constraint, issues });
  }

  static notFound(what: string, id?: string): ApiError {
    return new ApiError('not_found', id === undefined ? `No such ${what}` : `No such ${what}: ${id}`);
  }

  static unauthorized(message = 'Missing or invalid API key'): ApiError {
    return new ApiError('unauthorized', message);
  }

  static forbidden(message: string): ApiError {
    return new ApiError('forbidden', message);
  }

  /** The error a stored error body stands for (an idempotent replay). */
  static fromBody(body: ErrorBody): ApiError {
    return new ApiError(body.error.code, body.error.message, body.error.details);
  }

  static serverError(requestId: string): ApiError {
    return new ApiError('server_error', `Internal error; quote request id ${requestId} when reporting it`);
  }
}

export function toErrorBody(error: ApiError): ErrorBody {
  return { error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) } };
}
