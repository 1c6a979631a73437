import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The request being served, entered by the server for each request (http/server.ts), so that an
 * error nothing handled can still name the request it came from.
 */
export const requestScope = new AsyncLocalStorage<{ requestId: string }>();

export interface CrashPolicyOptions {
  /** Receives the one JSON line logged before the process ends (defaults to stderr). */
  write?: (line: string) => void;
  /** Ends the process (defaults to process.exit). */
  exit?: (code: number) => never | void;
}

/** The exit code of a process that met an error nothing handled (Node's own for an uncaught exception). */
export const CRASH_EXIT_CODE = 1;

const describeError = (error: unknown): { type: string; message: string; stack?: string } =>
  error instanceof Error
    ? { type: error.name, message: error.message, ...(error.stack ? { stack: error.stack } : {}) }
    : { type: typeof error, message: String(error) };

/** A request id the error carries itself, for errors raised outside any request's scope. */
const requestIdOf = (error: unknown): string | undefined => {
  const id = typeof error === 'object' && error !== null ? (error as { requestId?: unknown }).requestId : undefined;
  return typeof id === 'string' ? id : undefined;
};

/**
 * What `serve` and `worker` do with an exception or rejection nothing handled: log it (with the
 * request id when it arose while serving one) and end the process with a non-zero code. Its state
 * is unknown after such an error, so carrying on could serve wrong answers; a supervisor restarts
 * it instead, and the balancer sends the next requests elsewhere meanwhile.
 */
export function installCrashPolicy(role: string, options: CrashPolicyOptions = {}): void {
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let crashed = false;
  const crash = (kind: 'uncaughtException' | 'unhandledRejection', error: unknown) => {
    // A second error while the first is being logged changes nothing: the process is ending.
    if (crashed) return;
    crashed = true;
    const requestId = requestScope.getStore()?.requestId ?? requestIdOf(error);
    const line = {
      level: 'fatal',
      time: Date.now(),
      msg: `${role}: ${kind}, exiting`,
      role,
      kind,
      ...(requestId ? { requestId } : {}),
      err: describeError(error),
    };
    try {
      write(`${JSON.stringify(line)}\n`);
    } finally {
      exit(CRASH_EXIT_CODE);
    }
  };
  process.on('uncaughtException', (error) => crash('uncaughtException', error));
  process.on('unhandledRejection', (reason) => crash('unhandledRejection', reason));
}
