/**
 * A browser's view of the console's calls for tests: one person's cookie jar, the console's
 * Origin and CSRF header on every mutation (both can be left out to test the guard), and tRPC's
 * HTTP shapes (GET with `?input=` for queries, POST with the input as the body for mutations).
 */
export interface ConsoleAnswer {
  status: number;
  headers: Headers;
  /** `result.data` of a success. */
  data: any;
  /** The contract's error body (`{ error: { code, message, details? } }`) of a failure. */
  error: any;
}

export class ConsoleClient {
  cookie: string | undefined;
  /** The Set-Cookie header of the last answer that had one. */
  lastSetCookie: string | undefined;

  constructor(readonly origin: string) {}

  query(path: string, input?: unknown, headers: Record<string, string> = {}): Promise<ConsoleAnswer> {
    const url = new URL(`/console/trpc/${path}`, this.origin);
    if (input !== undefined) url.searchParams.set('input', JSON.stringify(input));
    return this.send(url, { method: 'GET', headers });
  }

  mutate(path: string, input?: unknown, options: { origin?: string | null; csrf?: boolean; headers?: Record<string, string> } = {}): Promise<ConsoleAnswer> {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
    const origin = options.origin === undefined ? this.origin : options.origin;
    if (origin !== null) headers.origin = origin;
    if (options.csrf !== false) headers['x-convo-csrf'] = '1';
    return this.send(new URL(`/console/trpc/${path}`, this.origin), { method: 'POST', headers, body: input === undefined ? undefined : JSON.stringify(input) });
  }

  private async send(url: URL, init: { method: string; headers: Record<string, string>; body?: string | undefined }): Promise<ConsoleAnswer> {
    const headers = { ...init.headers, ...(this.cookie ? { cookie: this.cookie } : {}) };
    const response = await fetch(url, { method: init.method, headers, ...(init.body === undefined ? {} : { body: init.body }) });
    const setCookie = response.headers.get('set-cookie');
    if (setCookie) {
      this.lastSetCookie = setCookie;
      const [pair] = setCookie.split(';');
      const value = pair?.slice(pair.indexOf('=') + 1);
      this.cookie = value ? pair : undefined;
    }
    const text = await response.text();
    const json = text ? JSON.parse(text) : undefined;
    return { status: response.status, headers: response.headers, data: json?.result?.data, error: json?.error?.data?.body };
  }
}
