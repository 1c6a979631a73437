import * as crypto from 'node:crypto';

export type KeyType = 'full_access' | 'read_only' | 'webhook';

/**
 * Key values show their type in their prefix. Webhook keys are Standard Webhooks secrets, so any Standard Webhooks
 * library verifies deliveries with the key string as shown.
 */
export const KEY_PREFIXES: Record<KeyType, string> = {
  full_access: 'convo_sk_',
  read_only: 'convo_rk_',
  webhook: 'whsec_',
};

export function generateKey(type: KeyType): string {
  const body =
    type === 'webhook' ? crypto.randomBytes(32).toString('base64') : crypto.randomBytes(32).toString('base64url');
  return `${KEY_PREFIXES[type]}${body}`;
}

/**
 * One-shot SHA-256 (`crypto.hash`, Node 20.12 on), cheaper than a Hash object on every request's key. Typed
 * loosely: the @types/node pinned for Node 20 may predate it.
 */
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** Keys are high-entropy, so a fast hash is enough: only the hash is stored. */
export const hashKey = (key: string): string =>
  oneShotHash ? oneShotHash('sha256', key, 'hex') : crypto.createHash('sha256').update(key, 'utf8').digest('hex');

/** Enough of the key to recognise it in a list, never enough to use it. */
export const redactKey = (key: string): string => {
  const prefix = Object.values(KEY_PREFIXES).find((p) => key.startsWith(p)) ?? '';
  return `${key.slice(0, prefix.length + 4)}…${key.slice(-4)}`;
};
