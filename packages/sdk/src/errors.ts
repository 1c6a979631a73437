import type { ErrorCode, ErrorDetails } from './contract.js';

/** Every error the SDK throws is a ConvoError. API errors carry the response's code and status. */
export class ConvoError extends Error {
  /** HTTP status, or undefined when no response arrived. */
  readonly status: number | undefined;
  /** The API's `error.code`, or `connection_error` / `timeout` when no response arrived. */
  readonly code: ErrorCode | 'connection_error' | 'timeout';
  readonly details: ErrorDetails | undefined;
  /** The `X-Request-Id` of the response: quote it to support. */
  readonly requestId: string | undefined;
  /** The raw JSON body of the error response. */
  readonly body: unknown;

  constructor(init: {
    message: string;
    status?: number | undefined;
    code: ConvoError['code'];
    details?: ErrorDetails | undefined;
    requestId?: string | undefined;
    body?: unknown;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
    this.requestId = init.requestId;
    this.body = init.body;
  }
}

/** 400: the request is invalid; `details.field` and `details.constraint` say what to fix. */
export class BadRequestError extends ConvoError {}
/** 401: the API key is missing, unknown or revoked. */
export class UnauthorizedError extends ConvoError {}
/** 403: the key may not do this (a read-only key writing, a webhook key calling the API). */
export class ForbiddenError extends ConvoError {}
/** 404: no such resource in this account. */
export class NotFoundError extends ConvoError {}
/** 429: too many requests; `retryAfter` is the number of seconds to wait. */
export class RateLimitedError extends ConvoError {
  readonly retryAfter: number | undefined;
  constructor(init: ConstructorParameters<typeof ConvoError>[0] & { retryAfter?: number | undefined }) {
    super(init);
    this.retryAfter = init.retryAfter;
  }
}
/** 5xx: the server failed; the request may be retried. */
export class ServerError extends ConvoError {}
/** The request never got a response (DNS, refused connection, reset). */
export class ConnectionError extends ConvoError {}
/** No response within the timeout. */
export class TimeoutError extends ConvoError {}

const byCode = {
  bad_request: BadRequestError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  not_found: NotFoundError,
  rate_limited: RateLimitedError,
  server_error: ServerError,
} as const;

const byStatus: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  429: 'rate_limited',
};

/** The one place that turns an error response into the matching ConvoError subclass. */
export function errorFromResponse(
  status: number,
  body: unknown,
  headers: { get(name: string): string | null },
): ConvoError {
  const error = (body as { error?: { code?: string; message?: string; details?: ErrorDetails } } | undefined)?.error;
  const code: ErrorCode =
    error?.code && error.code in byCode
      ? (error.code as ErrorCode)
      : (byStatus[status] ?? (status >= 500 ? 'server_error' : 'bad_request'));
  const init = {
    message: error?.message ?? `HTTP ${status}`,
    status,
    code,
    details: error?.details,
    requestId: headers.get('x-request-id') ?? undefined,
    body,
  };
  if (code === 'rate_limited')
    return new RateLimitedError({ ...init, retryAfter: parseRetryAfter(headers.get('retry-after')) });
  return new byCode[code](init);
}

/** `Retry-After` in seconds (or an HTTP date), as seconds. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}
