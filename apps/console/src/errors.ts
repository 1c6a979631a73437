import { TRPCClientError } from '@trpc/client';
import type { FieldValues, Path, UseFormSetError } from 'react-hook-form';

/** The contract's error (`{ code, message, details? }`) that a failed console call carries under `error.data`. */
export interface ConsoleError {
  code: string;
  message: string;
  field: string | undefined;
  constraint: string | undefined;
  httpStatus: number | undefined;
}

type Loose = Record<string, unknown> | undefined;
const record = (value: unknown): Loose =>
  value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
const string = (value: unknown) => (typeof value === 'string' ? value : undefined);

export function consoleErrorOf(error: unknown): ConsoleError {
  const data = error instanceof TRPCClientError ? record(error.data) : undefined;
  // The contract's body sits under data.body.error; a flatter data (code, message, details) is read too.
  const body = record(record(record(data?.body)?.error)) ?? data;
  const details = record(body?.details) ?? record(data?.details);
  return {
    code: string(body?.code) ?? string(data?.code) ?? 'server_error',
    message: string(body?.message) ?? (error instanceof Error ? error.message : 'Something went wrong. Try again.'),
    field: string(details?.field),
    constraint: string(details?.constraint),
    httpStatus: typeof data?.httpStatus === 'number' ? data.httpStatus : undefined,
  };
}

export function isUnauthorized(error: unknown): boolean {
  const { code, httpStatus } = consoleErrorOf(error);
  return code === 'unauthorized' || code === 'UNAUTHORIZED' || httpStatus === 401;
}

/**
 * Puts a failed call's message beside the form field its `details.field` names (`body.url`,
 * `events.0` → `url`, `events`), or at the top of the form when it names none of them.
 */
export function showServerError<T extends FieldValues>(
  error: unknown,
  setError: UseFormSetError<T>,
  fields: readonly Path<T>[],
): void {
  const problem = consoleErrorOf(error);
  const path = problem.field?.replace(/^(body|params|query)\./, '');
  const field = fields.find((name) => path === name || path?.startsWith(`${name}.`));
  if (field) setError(field, { type: 'server', message: problem.message }, { shouldFocus: true });
  else setError('root.server' as Path<T>, { type: 'server', message: problem.message });
}
