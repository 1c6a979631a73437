import type { ConvoError } from '@convo/sdk';

/**
 * The one place that turns an error into a one-line message on stderr and an exit code.
 * Kept free of runtime imports of the SDK so that loading it costs nothing at start-up:
 * SDK errors are recognised by their `code`.
 */

/** Exit codes by kind of failure; documented in `convo --help` and the README. */
export const EXIT_CODES = {
  ok: 0,
  failure: 1,
  usage: 2,
  auth: 3,
  not_found: 4,
  rate_limited: 5,
  unavailable: 6,
} as const;
export type ExitKind = keyof typeof EXIT_CODES;

/** Each SDK error code, by kind. Typed over the SDK's codes: a new code fails the build until it is placed. */
const KIND_BY_API_CODE: Record<ConvoError['code'], ExitKind> = {
  bad_request: 'failure',
  unauthorized: 'auth',
  forbidden: 'auth',
  not_found: 'not_found',
  rate_limited: 'rate_limited',
  server_error: 'unavailable',
  connection_error: 'unavailable',
  timeout: 'unavailable',
};

export const EXIT_CODES_HELP = `
Exit codes:
  0  success
  1  the request was refused (400: the message names the field and constraint),
     or a bulk command had failed rows
  2  usage: unknown command or option, bad option value
  3  authentication: no API key, or the key is unknown (401) or not allowed (403)
  4  not found (404)
  5  rate limited (429) after the retries
  6  server or network: 5xx, connection refused, timeout`;

/** An error of the CLI itself, with the kind of exit it calls for. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly kind: ExitKind = 'failure',
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Bad command-line input: exit 2. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, 'usage');
  }
}

/** Commander's own errors (`commander.unknownOption`, …), which carry the exit code commander chose. */
interface CommanderLikeError {
  code: string;
  exitCode: number;
  message: string;
}

const codeOf = (error: unknown): string | undefined => {
  const code = error instanceof Error ? (error as Error & { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
};

const isCommanderError = (error: unknown): error is CommanderLikeError =>
  codeOf(error)?.startsWith('commander.') ?? false;

export const isConvoError = (error: unknown): error is ConvoError =>
  error instanceof Error && 'requestId' in error && Object.hasOwn(KIND_BY_API_CODE, codeOf(error) ?? '');

export function exitKindOf(error: unknown): ExitKind {
  if (error instanceof CliError) return error.kind;
  if (isConvoError(error)) return KIND_BY_API_CODE[error.code];
  if (isCommanderError(error)) return error.exitCode === 0 ? 'ok' : 'usage';
  return 'failure';
}

export const exitCodeOf = (error: unknown): number => EXIT_CODES[exitKindOf(error)];

/** One line: the message, for a 400 the field and constraint, and the request id to quote to support. */
export function messageOf(error: unknown): string {
  if (isConvoError(error)) {
    let message = error.message;
    if (error.code === 'bad_request' && error.details) {
      message += ` [${error.details.field}: ${error.details.constraint}]`;
      const more = (error.details.issues?.length ?? 1) - 1;
      if (more > 0) message += ` (and ${more} more ${more === 1 ? 'problem' : 'problems'})`;
    }
    const systemCode = networkCodeOf(error);
    if (systemCode && !message.includes(systemCode)) message += ` (${systemCode})`;
    if (error.requestId) message += ` (request ${error.requestId})`;
    return oneLine(message);
  }
  if (isCommanderError(error)) return oneLine(error.message.replace(/^error: /, ''));
  if (error instanceof Error) return oneLine(error.message);
  return oneLine(String(error));
}

/** Why the network failed, from fetch's `cause` chain: a system code (`ECONNREFUSED`), else the innermost message. */
function networkCodeOf(error: Error): string | undefined {
  const chain: Error[] = [];
  for (let cause = error.cause; cause instanceof Error && chain.length < 4; cause = cause.cause) chain.push(cause);
  const code = chain
    .map((cause) => (cause as Error & { code?: unknown }).code)
    .find((c) => typeof c === 'string' && /^E[A-Z_]+$/.test(c));
  if (typeof code === 'string') return code;
  // The first cause is fetch's own "fetch failed", already in the SDK's message.
  return chain.length > 1 ? chain.at(-1)?.message : undefined;
}

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, ' ').trim();

/**
 * Writes `convo: <message>` to stderr (except for help and version, which are not errors) and returns the exit code.
 */
export function reportError(error: unknown, stderr: { write(text: string): unknown }): number {
  const code = exitCodeOf(error);
  if (code !== 0 && !(isCommanderError(error) && error.code === 'commander.help'))
    stderr.write(`convo: ${messageOf(error)}\n`);
  return code;
}
