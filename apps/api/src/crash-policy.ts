/**
 * The ids of the requests being served, so an unhandled error can name where it may have come from. A Set, not
 * AsyncLocalStorage: holds the get_by_id target of bench/README.md.
 */
export const requestsInFlight = new Set<string>();

/** More than any server serves at once, so requests whose end was never seen cannot grow the Set without bound. */
const MAX_TRACKED = 10_000;

export function requestStarted(requestId: string): void {
  if (requestsInFlight.size >= MAX_TRACKED) requestsInFlight.delete(requestsInFlight.values().next().value as string);
  requestsInFlight.add(requestId);
}

export function requestEnded(requestId: string): void {
  requestsInFlight.delete(requestId);
}

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
 * On an unhandled exception or rejection, logs it and ends the process: its state is unknown, so carrying on
 * could serve wrong answers; a supervisor restarts it instead.
 */
export function installCrashPolicy(role: string, options: CrashPolicyOptions = {}): void {
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let crashed = false;
  const crash = (kind: 'uncaughtException' | 'unhandledRejection', error: unknown) => {
    // A second error while the first is being logged changes nothing: the process is ending.
    if (crashed) return;
    crashed = true;
    // The request the error names, else the only one in flight; with several in flight, all their ids.
    const inFlight = [...requestsInFlight];
    const requestId = requestIdOf(error) ?? (inFlight.length === 1 ? inFlight[0] : undefined);
    const line = {
      level: 'fatal',
      time: Date.now(),
      msg: `${role}: ${kind}, exiting`,
      role,
      kind,
      ...(requestId ? { requestId } : inFlight.length > 1 ? { requestsInFlight: inFlight.slice(0, 100) } : {}),
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
