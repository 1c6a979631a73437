import type { ErrorCode } from '@convo/core';
import { type TRPC_ERROR_CODE_KEY, TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import { type ApiError, toErrorBody } from '../errors.js';

const TRPC_CODES: Record<ErrorCode, TRPC_ERROR_CODE_KEY> = {
  bad_request: 'BAD_REQUEST',
  unauthorized: 'UNAUTHORIZED',
  forbidden: 'FORBIDDEN',
  not_found: 'NOT_FOUND',
  rate_limited: 'TOO_MANY_REQUESTS',
  server_error: 'INTERNAL_SERVER_ERROR',
};

/**
 * Every tRPC error's shape: tRPC's own envelope, so its clients read it, with the HTTP status and the same
 * error body a REST caller gets under `data`.
 */
export function trpcErrorShape(error: ApiError, path: string | undefined) {
  const code = TRPC_CODES[error.code];
  return {
    message: error.message,
    code: TRPC_ERROR_CODES_BY_KEY[code],
    data: { code, httpStatus: error.status, path, body: toErrorBody(error) },
  };
}
