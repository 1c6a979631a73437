import http from 'node:http';
import https from 'node:https';
import { isIpAddress, isPublicAddress, publicOnlyLookup } from '../webhook-addresses.js';

/** The most of a receiver's answer that is read; the rest is dropped with the connection. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  /** The whole attempt (look-up, connection, answer) must finish within this. */
  timeoutMs: number;
  /** Plain http and non-public addresses are allowed (development, tests). */
  allowPrivate: boolean;
}

export interface WebhookResponse {
  /** Null when no answer arrived. */
  statusCode: number | null;
  /** Null for a complete 2xx answer. */
  error: string | null;
  durationMs: number;
}

const MAX_ERROR_LENGTH = 500;

/** An idle connection to a receiver is closed after this; a busy receiver's connections are reused. */
const IDLE_CONNECTION_MS = 4_000;

/**
 * Connections are kept open between attempts (opening one per delivery cost a third of the worker's
 * time: bench/README.md, "Webhook deliveries"). The address check runs when a connection is opened,
 * and a kept connection stays with the address that passed it. Private addresses, when allowed, get
 * agents of their own, so a connection opened under that setting never serves a checked request.
 */
const agents = {
  checked: {
    http: new http.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
    https: new https.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
  },
  private: {
    http: new http.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
    https: new https.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
  },
};

/**
 * POSTs one webhook with node:http(s), not fetch, because the request must be held to the rules
 * fetch cannot express: the DNS answer is checked before connecting (no private addresses), no
 * redirect is followed, the whole attempt has one deadline and only so much of the answer is read.
 */
export function postWebhook(request: WebhookRequest): Promise<WebhookResponse> {
  const started = performance.now();
  const elapsed = () => Math.max(0, Math.round(performance.now() - started));

  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return Promise.resolve({ statusCode: null, error: 'invalid URL', durationMs: elapsed() });
  }
  const refusal = refusalOf(url, request.allowPrivate);
  if (refusal) return Promise.resolve({ statusCode: null, error: refusal, durationMs: elapsed() });

  return new Promise((resolve) => {
    let statusCode: number | null = null;
    let settled = false;
    /** `complete`: the whole answer was read, so the connection may serve the next attempt. */
    const finish = (error: string | null, complete = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve({ statusCode, error: error === null ? null : error.slice(0, MAX_ERROR_LENGTH), durationMs: elapsed() });
      if (!complete) req.destroy();
    };

    const secure = url.protocol === 'https:';
    const pool = request.allowPrivate ? agents.private : agents.checked;
    const req = (secure ? https : http).request(url, {
      method: 'POST',
      headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
      agent: secure ? pool.https : pool.http,
      ...(request.allowPrivate ? {} : { lookup: publicOnlyLookup }),
    });
    const deadline = setTimeout(() => finish(`timeout after ${request.timeoutMs} ms`), request.timeoutMs);

    req.on('error', (error: NodeJS.ErrnoException) => finish(error.message || error.code || 'request failed'));
    req.on('response', (res) => {
      statusCode = res.statusCode ?? null;
      let received = 0;
      const outcome = () => errorForStatus(statusCode, res.statusMessage);
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received >= MAX_RESPONSE_BYTES) finish(outcome());
      });
      res.on('end', () => finish(outcome(), true));
      res.on('error', (error) => finish(error.message));
      res.on('aborted', () => finish('the answer was cut off'));
    });
    req.end(request.body);
  });
}

/** Why this URL may not be requested at all under these settings. */
function refusalOf(url: URL, allowPrivate: boolean): string | undefined {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `unsupported protocol ${url.protocol}`;
  if (allowPrivate) return undefined;
  if (url.protocol !== 'https:') return 'plain http is not allowed (https only)';
  // An IP literal is connected to without a DNS look-up, so it is checked here.
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (isIpAddress(host) && !isPublicAddress(host)) return `refused non-public address ${host}`;
  return undefined;
}

function errorForStatus(statusCode: number | null, statusMessage: string | undefined): string | null {
  if (statusCode === null) return 'no status in the answer';
  if (statusCode >= 200 && statusCode < 300) return null;
  if (statusCode >= 300 && statusCode < 400) return `redirect not followed (${statusCode})`;
  return `HTTP ${statusCode}${statusMessage ? ` ${statusMessage}` : ''}`;
}
