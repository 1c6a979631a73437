import { createHmac, randomBytes } from 'node:crypto';
import type { Event } from '@convo/sdk';

/** How long the local handler has to answer a delivery, as the server gives a webhook endpoint. */
export const FORWARD_TIMEOUT_MS = 10_000;

/** A Standard Webhooks signing secret: `whsec_` and 24 random bytes in base64, new for each run. */
export const newSigningSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

/**
 * The `webhook-signature` of a delivery as the server signs it: `v1,` and the base64 HMAC-SHA256
 * of `id.timestamp.body`, keyed by the base64-decoded part of the secret after `whsec_`.
 */
export function signatureOf(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** What the local handler answered: its status, or why there was no answer; and how long it took. */
export type ForwardResult = { status: number; ms: number } | { error: string; ms: number };

/** POSTs `event` to `url` as a signed Standard Webhooks delivery; never throws. */
export async function forwardEvent(
  url: string,
  event: Event,
  secret: string,
  options: { userAgent: string; signal?: AbortSignal },
): Promise<ForwardResult> {
  const body = JSON.stringify(event);
  const timestamp = Math.floor(Date.now() / 1000);
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const timeout = AbortSignal.timeout(FORWARD_TIMEOUT_MS);
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': options.userAgent,
        'webhook-id': event.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureOf(secret, event.id, timestamp, body),
      },
      body,
      signal: options.signal ? AbortSignal.any([timeout, options.signal]) : timeout,
    });
    // Read to the end, so the time is the whole answer's and the connection is free for the next.
    await response.arrayBuffer();
    return { status: response.status, ms: elapsed() };
  } catch (error) {
    if (timeout.aborted) return { error: `no answer within ${FORWARD_TIMEOUT_MS / 1000} s`, ms: elapsed() };
    // fetch says only "fetch failed"; the reason (ECONNREFUSED…) is its cause.
    const cause = (error as Error & { cause?: Error }).cause;
    return { error: cause?.message ?? (error as Error).message, ms: elapsed() };
  }
}
