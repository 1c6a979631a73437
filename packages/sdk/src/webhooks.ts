import type { Event } from './contract.js';

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

const header = (headers: HeaderSource, name: string): string | undefined => {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
};

const base64ToBytes = (value: string): Uint8Array => Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
const bytesToBase64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes));

/** Compares without leaking where the first difference is. */
function timingSafeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * Verifies a webhook delivery (Standard Webhooks) and returns its event.
 * `rawBody` must be the body exactly as received; `secret` is a webhook key (`whsec_…`).
 * Any of the space-separated `v1,` signatures may match (keys rotate without downtime); the
 * timestamp must be within `toleranceSeconds` (default 5 minutes) of now.
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderSource,
  secret: string,
  options: { toleranceSeconds?: number; now?: Date } = {},
): Promise<Event> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures)
    throw new WebhookVerificationError('Missing webhook-id, webhook-timestamp or webhook-signature header');

  const seconds = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || !Number.isSafeInteger(seconds))
    throw new WebhookVerificationError('Invalid webhook-timestamp');
  const nowSeconds = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(nowSeconds - seconds) > tolerance)
    throw new WebhookVerificationError('webhook-timestamp is outside the tolerance');

  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  let keyBytes: Uint8Array;
  try {
    keyBytes = base64ToBytes(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
  } catch {
    throw new WebhookVerificationError('The secret is not a webhook key (whsec_…)');
  }
  const key = await globalThis.crypto.subtle.importKey(
    'raw',
    keyBytes as BufferSource,
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = await globalThis.crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${id}.${timestamp}.${body}`));
  const expected = bytesToBase64(new Uint8Array(mac));

  const matched = signatures
    .split(' ')
    .map((s) => s.trim())
    .filter(Boolean)
    .some((signature) => {
      const [version, value] = signature.split(',', 2);
      return version === 'v1' && value !== undefined && timingSafeEqual(value, expected);
    });
  if (!matched) throw new WebhookVerificationError('No matching signature');

  try {
    return JSON.parse(body) as Event;
  } catch {
    throw new WebhookVerificationError('The body is not JSON');
  }
}
