import { type OperationId, type OperationInput, type OperationResult, fillPath } from './contract.js';
import { ROUTES } from './generated/contract.js';
import { ServerSentEventParser } from './server-sent-events.js';
import {
  ConnectionError,
  ConvoError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  errorFromResponse,
} from './errors.js';

export interface RequestOptions {
  /** Sent as `Idempotency-Key` on a POST; by default each POST gets a new random key, kept across its retries. */
  idempotencyKey?: string;
  timeoutMs?: number;
  maxRetries?: number;
  signal?: AbortSignal;
}

/** A retry about to be made (ConvoOptions.onRetry): why, which attempt, and how long the client waits first. */
export interface RetryEvent {
  /** What the failed attempt threw: a RateLimitedError for a 429, a ServerError, ConnectionError or TimeoutError. */
  error: ConvoError;
  /** The attempt about to be made: 2 for the first retry. */
  attempt: number;
  /** The most attempts this request makes: maxRetries + 1 (Infinity for a stream that has opened: it reconnects until stopped). */
  maxAttempts: number;
  /** How long the client waits before that attempt, in milliseconds (Retry-After on a 429). */
  delayMs: number;
  /** The operation's method and path, e.g. `POST` and `/contacts`. */
  method: string;
  path: string;
}

export interface SenderConfig {
  apiKey: string;
  /** Ends with /v1. */
  baseUrl: string;
  timeoutMs: number;
  maxRetries: number;
  fetch: typeof fetch;
  /** Waits between attempts (ConvoOptions.sleep); a timer by default. */
  sleep?: (ms: number) => Promise<void>;
  /** Told of each retry before its wait (ConvoOptions.onRetry). */
  onRetry?: (retry: RetryEvent) => void;
}

const RETRY_BASE_MS = 500;
const RETRY_MAX_MS = 8_000;
/** A Retry-After longer than this is not waited out: the error goes to the caller. */
const RETRY_AFTER_MAX_MS = 60_000;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The one request sender: builds the request of an operation from the endpoint table, and owns
 * timeouts, retries with exponential backoff and jitter (network errors, 429, 5xx; never other
 * 4xx) and idempotency keys (every POST carries one, the same on each retry).
 */
export class RequestSender {
  constructor(private readonly config: SenderConfig) {}

  async send<K extends OperationId>(
    operationId: K,
    input: OperationInput<K>,
    options: RequestOptions = {},
  ): Promise<OperationResult<K>> {
    const operation = ROUTES[operationId];
    const parts = input as OperationParts;
    const url = this.urlOf(operation.path, parts);
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.config.apiKey}`,
      accept: 'application/json',
    };
    let body: RequestBody | undefined;
    const route = operation as { upload?: string; download?: boolean };
    if (route.upload) {
      const upload = parts.body as PreparedUpload;
      if ('stream' in upload) {
        const multipart = multipartStream(route.upload, upload);
        headers['content-type'] = multipart.contentType;
        body = multipart.body;
      } else {
        // fetch writes the multipart Content-Type with its boundary, and reads a Blob again on a retry.
        body = new FormData();
        body.append(route.upload, upload.file, upload.filename);
      }
    } else if (operation.method === 'POST' || operation.method === 'PATCH') {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(parts.body ?? {});
    }
    if (route.download) headers.accept = '*/*';
    if (operation.method === 'POST')
      headers['idempotency-key'] = options.idempotencyKey ?? globalThis.crypto.randomUUID();

    const maxRetries = options.maxRetries ?? this.config.maxRetries;
    const sleep = this.config.sleep ?? defaultSleep;
    for (let attempt = 0; ; attempt++) {
      let error: ConvoError;
      try {
        const response = await this.attempt(url, operation.method, headers, body, options);
        if (response.ok) {
          if (response.status === 204) return undefined as OperationResult<K>;
          if (route.download) return response.body as unknown as OperationResult<K>;
          return (await response.json()) as OperationResult<K>;
        }
        error = errorFromResponse(response.status, await jsonOrUndefined(response), response.headers);
      } catch (caught) {
        if (!(caught instanceof ConnectionError || caught instanceof TimeoutError)) throw caught;
        error = caught;
      }
      const delay = this.retryDelay(error, attempt);
      if (attempt >= maxRetries || delay === undefined || options.signal?.aborted) throw error;
      this.config.onRetry?.({
        error,
        attempt: attempt + 2,
        maxAttempts: maxRetries + 1,
        delayMs: delay,
        method: operation.method,
        path: url.pathname,
      });
      await sleep(delay);
    }
  }

  /**
   * The events of a stream operation (Server-Sent Events), each `data` parsed as JSON, until the
   * caller stops: breaking out of `for await` or aborting `options.signal` closes the connection.
   * Until the stream first opens, failures are retried like any request's; once it has opened, a
   * dropped connection, a restarting server (refused connections, 5xx), a 429 or an ended stream
   * is retried without limit, with backoff, resuming after the last event yielded (`Last-Event-ID`),
   * so each event is yielded once, in order. Other 4xx throw. `timeoutMs` bounds the wait for the
   * response and, once open, the silence between two chunks (the server writes at least every 15 s).
   */
  async *stream<K extends OperationId>(
    operationId: K,
    input: OperationInput<K>,
    options: StreamOptions = {},
  ): AsyncGenerator<unknown, void, undefined> {
    const operation = ROUTES[operationId];
    const url = this.urlOf(operation.path, input as OperationParts);
    const { signal } = options;
    const maxRetries = options.maxRetries ?? this.config.maxRetries;
    const timeoutMs = options.timeoutMs ?? this.config.timeoutMs;
    let lastEventId = '';
    let serverRetryMs = 0;
    let opened = false;
    // Failures since the last event yielded: the backoff grows with them.
    let failures = 0;
    while (!signal?.aborted) {
      const headers: Record<string, string> = {
        authorization: `Bearer ${this.config.apiKey}`,
        accept: 'text/event-stream',
        'cache-control': 'no-cache',
      };
      if (lastEventId) headers['last-event-id'] = lastEventId;
      const connection = new AbortController();
      let timedOut = false;
      let streaming = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const startTimer = () => {
        timer = setTimeout(() => {
          timedOut = true;
          connection.abort();
        }, timeoutMs);
      };
      const onAbort = () => connection.abort();
      signal?.addEventListener('abort', onAbort, { once: true });
      let error: ConvoError;
      try {
        startTimer();
        const response = await this.config.fetch(url, { method: operation.method, headers, signal: connection.signal });
        if (!response.ok) {
          error = errorFromResponse(response.status, await jsonOrUndefined(response), response.headers);
          if (!(error instanceof RateLimitedError || error instanceof ServerError)) throw error;
        } else if (!response.headers.get('content-type')?.startsWith('text/event-stream') || !response.body) {
          throw new ServerError({
            message: `${url.href} answered ${response.headers.get('content-type') ?? 'no content type'}, not an event stream: is the base URL right?`,
            status: response.status,
            code: 'server_error',
            requestId: response.headers.get('x-request-id') ?? undefined,
          });
        } else {
          opened = true;
          streaming = true;
          const parser = new ServerSentEventParser();
          const decoder = new TextDecoder();
          const reader = response.body.getReader();
          for (;;) {
            clearTimeout(timer);
            startTimer();
            const read = await reader.read();
            if (read.done) break;
            for (const event of parser.push(decoder.decode(read.value, { stream: true }))) {
              lastEventId = event.id || lastEventId;
              failures = 0;
              // The consumer's time is not the server's silence.
              clearTimeout(timer);
              yield parseEventData(event.data, url);
              startTimer();
            }
            lastEventId = parser.lastEventId || lastEventId;
            serverRetryMs = parser.retry ?? serverRetryMs;
          }
          error = new ConnectionError({ message: `The event stream of ${url.origin} ended`, code: 'connection_error' });
        }
      } catch (caught) {
        if (signal?.aborted) return;
        if (caught instanceof ConvoError && !(caught instanceof ConnectionError)) throw caught;
        error = timedOut
          ? new TimeoutError({
              message: `Nothing from ${url.origin} within ${timeoutMs} ms: ${operation.method} ${url.pathname}`,
              code: 'timeout',
              cause: caught,
            })
          : new ConnectionError({
              message: `${streaming ? `The event stream of ${url.origin} was cut` : `Could not reach ${url.origin}`}: ${(caught as Error)?.message ?? String(caught)}`,
              code: 'connection_error',
              cause: caught,
            });
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        // Closes the connection when the loop moves on, and when the consumer stops iterating.
        connection.abort();
      }
      const backoff = this.retryDelay(error, failures);
      if (backoff === undefined || (!opened && failures >= maxRetries)) throw error;
      const delay = error instanceof RateLimitedError ? backoff : Math.max(backoff, serverRetryMs);
      failures++;
      this.config.onRetry?.({
        error,
        attempt: failures + 1,
        maxAttempts: opened ? Number.POSITIVE_INFINITY : maxRetries + 1,
        delayMs: delay,
        method: operation.method,
        path: url.pathname,
      });
      await this.pause(delay, signal);
    }
  }

  /** Waits `ms` (through ConvoOptions.sleep when given), or less when `signal` aborts, leaving no timer behind. */
  private pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      signal?.addEventListener('abort', done, { once: true });
      if (this.config.sleep) this.config.sleep(ms).then(done, done);
      else timer = setTimeout(done, ms);
    });
  }

  private urlOf(path: string, parts: OperationParts): URL {
    const url = new URL(this.config.baseUrl.replace(/\/+$/, '') + fillPath(path, parts.params));
    for (const [name, value] of Object.entries(parts.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    return url;
  }

  private async attempt(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body: RequestBody | undefined,
    options: RequestOptions,
  ): Promise<Response> {
    const timeoutMs = options.timeoutMs ?? this.config.timeoutMs;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    const onAbort = () => controller.abort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      // A stream body must say so to fetch (`duplex`), which sends it as it is read.
      const init: RequestInit & { duplex?: 'half' } = { method, headers, body, signal: controller.signal };
      if (body instanceof ReadableStream) init.duplex = 'half';
      return await this.config.fetch(url, init);
    } catch (cause) {
      if (options.signal?.aborted) throw cause;
      if (controller.signal.aborted) {
        throw new TimeoutError({
          message: `No response within ${timeoutMs} ms: ${method} ${url.pathname}`,
          code: 'timeout',
          cause,
        });
      }
      throw new ConnectionError({
        message: `Could not reach ${url.origin}: ${(cause as Error)?.message ?? String(cause)}`,
        code: 'connection_error',
        cause,
      });
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Milliseconds to wait before retrying after `error`, or undefined when it must not be retried. */
  private retryDelay(error: ConvoError, attempt: number): number | undefined {
    const backoff = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** attempt);
    const jittered = backoff / 2 + Math.random() * (backoff / 2);
    if (error instanceof RateLimitedError) {
      if (error.retryAfter === undefined) return jittered;
      const wait = error.retryAfter * 1000;
      return wait > RETRY_AFTER_MAX_MS ? undefined : wait;
    }
    if (error instanceof ServerError || error instanceof ConnectionError || error instanceof TimeoutError)
      return jittered;
    return undefined;
  }
}

type RequestBody = string | FormData | ReadableStream<Uint8Array>;

type OperationParts = { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown };

/** What a stream takes: no idempotency key, since it only reads. */
export type StreamOptions = Omit<RequestOptions, 'idempotencyKey'>;

async function jsonOrUndefined(response: Response): Promise<unknown> {
  const text = await response.text();
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

function parseEventData(data: string, url: URL): unknown {
  try {
    return JSON.parse(data);
  } catch (cause) {
    throw new ServerError({
      message: `The event stream of ${url.origin} sent data that is not JSON: ${data.slice(0, 80)}`,
      code: 'server_error',
      cause,
    });
  }
}

/** Bytes a stream yields: a web ReadableStream, or any async iterable such as a Node stream. */
export type ByteStream = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** An upload as `files.create` hands it over: a Blob goes as FormData, a stream as a multipart body written by hand. */
export type PreparedUpload = { file: Blob; filename: string } | { stream: ByteStream; filename: string; type: string };

/**
 * A streamed upload as one `multipart/form-data` part, written by hand because FormData takes only
 * Blobs. The name is quoted as the HTML standard's form encoding does (`"`, CR and LF escaped).
 */
function multipartStream(
  part: string,
  upload: { stream: ByteStream; filename: string; type: string },
): { contentType: string; body: ReadableStream<Uint8Array> } {
  const boundary = `convo-${globalThis.crypto.randomUUID()}`;
  const encoder = new TextEncoder();
  const name = upload.filename.replaceAll('"', '%22').replaceAll('\r', '%0D').replaceAll('\n', '%0A');
  const head = encoder.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="${part}"; filename="${name}"\r\n` +
      `Content-Type: ${upload.type}\r\n\r\n`,
  );
  const tail = encoder.encode(`\r\n--${boundary}--\r\n`);
  async function* chunks(): AsyncGenerator<Uint8Array> {
    yield head;
    const source = upload.stream;
    if ('getReader' in source) {
      const reader = source.getReader();
      for (let read = await reader.read(); !read.done; read = await reader.read()) yield read.value;
    } else {
      for await (const chunk of source) yield typeof chunk === 'string' ? encoder.encode(chunk) : chunk;
    }
    yield tail;
  }
  const iterator = chunks();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await iterator.return(undefined);
    },
  });
  return { contentType: `multipart/form-data; boundary=${boundary}`, body };
}
