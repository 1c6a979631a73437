import { request as httpRequest } from 'node:http';

/**
 * A browser's view of the console's calls for tests: one person's cookie jar, the console's
 * Origin and CSRF header on every mutation (both can be left out to test the guard), and tRPC's
 * HTTP shapes (GET with `?input=` for queries, POST with the input as the body for mutations).
 * Sent with node:http rather than fetch, so that a test can choose the client's own address
 * (`localAddress`, e.g. 127.0.0.2: the sign-in guard counts per address) and a `Host` header.
 */
export interface ConsoleAnswer {
  status: number;
  headers: Headers;
  /** `result.data` of a success. */
  data: any;
  /** The contract's error body (`{ error: { code, message, details? } }`) of a failure. */
  error: any;
}

export interface ConsoleClientOptions {
  /** The loopback address the client's connections come from (the server's `request.ip`). */
  localAddress?: string;
}

export class ConsoleClient {
  cookie: string | undefined;
  /** The Set-Cookie header of the last answer that had one. */
  lastSetCookie: string | undefined;

  constructor(
    readonly origin: string,
    private readonly options: ConsoleClientOptions = {},
  ) {}

  query(path: string, input?: unknown, headers: Record<string, string> = {}): Promise<ConsoleAnswer> {
    const url = new URL(`/console/trpc/${path}`, this.origin);
    if (input !== undefined) url.searchParams.set('input', JSON.stringify(input));
    return this.send(url, { method: 'GET', headers });
  }

  mutate(
    path: string,
    input?: unknown,
    options: { origin?: string | null; csrf?: boolean; headers?: Record<string, string> } = {},
  ): Promise<ConsoleAnswer> {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
    const origin = options.origin === undefined ? this.origin : options.origin;
    if (origin !== null) headers.origin = origin;
    if (options.csrf !== false) headers['x-convo-csrf'] = '1';
    return this.send(new URL(`/console/trpc/${path}`, this.origin), {
      method: 'POST',
      headers,
      body: input === undefined ? undefined : JSON.stringify(input),
    });
  }

  private async send(
    url: URL,
    init: { method: string; headers: Record<string, string>; body?: string | undefined },
  ): Promise<ConsoleAnswer> {
    const headers = { ...init.headers, ...(this.cookie ? { cookie: this.cookie } : {}) };
    const response = await exchange(url, init.method, headers, init.body, this.options.localAddress);
    const setCookie = response.headers.get('set-cookie');
    if (setCookie) {
      this.lastSetCookie = setCookie;
      const [pair] = setCookie.split(';');
      const value = pair?.slice(pair.indexOf('=') + 1);
      this.cookie = value ? pair : undefined;
    }
    const json = response.text ? JSON.parse(response.text) : undefined;
    return {
      status: response.status,
      headers: response.headers,
      data: json?.result?.data,
      error: json?.error?.data?.body,
    };
  }
}

/** One HTTP exchange, read to the end. */
function exchange(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  localAddress: string | undefined,
): Promise<{ status: number; headers: Headers; text: string }> {
  return new Promise((resolve, reject) => {
    const sent = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
    const request = httpRequest(
      url,
      { method, headers: sent, ...(localAddress ? { localAddress } : {}) },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const answerHeaders = new Headers();
          for (const [name, value] of Object.entries(response.headers)) {
            for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value])
              answerHeaders.append(name, one);
          }
          resolve({
            status: response.statusCode ?? 0,
            headers: answerHeaders,
            text: Buffer.concat(chunks).toString('utf8'),
          });
        });
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}
