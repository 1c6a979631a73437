/** What a request gets from the call it shared: the result, its place among the call's requests, their number. */
export interface Shared<T> {
  result: T;
  index: number;
  size: number;
}

interface Waiting<T> {
  resolve: (shared: Shared<T>) => void;
  reject: (error: unknown) => void;
}

/**
 * Requests of one key (an account's rate-limit count, an API key's lookup) that arrive while the
 * database answers an earlier one share the next call, made as soon as that one ends: one round
 * trip for all of them. A request never joins a call already sent, so what it is answered was
 * read after it arrived (a key revoked before is refused, a count is never older than the
 * request). It exists for the benchmark's target of 0.7 times the expert floor (bench/README.md,
 * Targets), which a key lookup and a count round trip per request miss on Postgres.
 */
export function coalesced<T>(call: (key: string, requests: number) => Promise<T>): (key: string) => Promise<Shared<T>> {
  /** Per key whose call is in flight, the requests that came since, for the next call. */
  const next = new Map<string, Waiting<T>[]>();

  const send = (key: string, batch: Waiting<T>[]): void => {
    next.set(key, []);
    call(key, batch.length)
      .then(
        (result) => {
          for (const [index, waiting] of batch.entries()) waiting.resolve({ result, index, size: batch.length });
        },
        (error: unknown) => {
          for (const waiting of batch) waiting.reject(error);
        },
      )
      .finally(() => {
        const queued = next.get(key) ?? [];
        if (queued.length > 0) send(key, queued);
        else next.delete(key);
      });
  };

  return (key) =>
    new Promise((resolve, reject) => {
      const queued = next.get(key);
      if (queued) queued.push({ resolve, reject });
      else send(key, [{ resolve, reject }]);
    });
}
