import { readFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifyWebhook } from './webhooks.js';

/**
 * The Standard Webhooks vectors the Python SDK's tests check too (packages/sdk-python/tests/test_webhooks.py):
 * both SDKs must make the same signatures and give the same verdicts, so they cannot drift apart.
 */
interface Vectors {
  signatures: { made_by: string; secret: string; id: string; timestamp: number; payload: string; signature: string }[];
  verifications: {
    name: string;
    secret: string;
    headers: Record<string, string>;
    payload: string;
    now: number;
    error: string | null;
  }[];
}
const vectors = JSON.parse(
  readFileSync(new URL('../../sdk-python/tests/fixtures/webhook-vectors.json', import.meta.url), 'utf8'),
) as Vectors;
const at = (seconds: number) => new Date(seconds * 1000);

describe('the webhook vectors shared with the Python SDK', () => {
  it.each(vectors.signatures)('signs and verifies $id ($made_by)', async (vector) => {
    expect(new Webhook(vector.secret).sign(vector.id, at(vector.timestamp), vector.payload)).toBe(vector.signature);
    const headers = {
      'webhook-id': vector.id,
      'webhook-timestamp': String(vector.timestamp),
      'webhook-signature': vector.signature,
    };
    await expect(
      verifyWebhook(new TextEncoder().encode(vector.payload), headers, vector.secret, { now: at(vector.timestamp) }),
    ).resolves.toEqual(JSON.parse(vector.payload));
  });

  it.each(vectors.verifications)('verifies $name as the Python SDK does', async (vector) => {
    const verified = verifyWebhook(vector.payload, vector.headers, vector.secret, { now: at(vector.now) });
    if (vector.error === null) await expect(verified).resolves.toEqual(JSON.parse(vector.payload));
    else await expect(verified).rejects.toThrow(new RegExp(`^${vector.error.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
  });
});
