import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { WebhookVerificationError, verifyWebhook } from './webhooks.js';

const secret = `whsec_${randomBytes(32).toString('base64')}`;
const other = `whsec_${randomBytes(32).toString('base64')}`;
const body = JSON.stringify({
  id: 'evt_1',
  type: 'order.placed',
  created_at: '2026-11-22T10:00:00.000Z',
  data: { id: 'ord_1' },
});

/** Signs like a Standard Webhooks sender, with the reference library. */
function sign(key: string, id = 'evt_1', at = new Date()) {
  const signature = new Webhook(key).sign(id, at, body);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signature,
  };
}

describe('verifyWebhook', () => {
  it('accepts a delivery signed by the reference implementation and returns the event', async () => {
    await expect(verifyWebhook(body, sign(secret), secret)).resolves.toMatchObject({
      id: 'evt_1',
      type: 'order.placed',
    });
    await expect(
      verifyWebhook(new TextEncoder().encode(body), new Headers(sign(secret)), secret),
    ).resolves.toMatchObject({ id: 'evt_1' });
  });

  it('accepts any of several signatures (key rotation)', async () => {
    // One moment for both: signatures of different seconds do not sign the same timestamp header.
    const at = new Date();
    const headers = sign(secret, 'evt_1', at);
    headers['webhook-signature'] = `${sign(other, 'evt_1', at)['webhook-signature']} ${headers['webhook-signature']}`;
    await expect(verifyWebhook(body, headers, secret)).resolves.toBeDefined();
    await expect(verifyWebhook(body, headers, other)).resolves.toBeDefined();
  });

  it('rejects a wrong secret, a changed body, an old or future timestamp, and missing headers', async () => {
    await expect(verifyWebhook(body, sign(other), secret)).rejects.toBeInstanceOf(WebhookVerificationError);
    await expect(verifyWebhook(`${body} `, sign(secret), secret)).rejects.toThrow(/signature/);
    await expect(verifyWebhook(body, sign(secret, 'evt_1', new Date(Date.now() - 330_000)), secret)).rejects.toThrow(
      /tolerance/,
    );
    await expect(verifyWebhook(body, sign(secret, 'evt_1', new Date(Date.now() + 330_000)), secret)).rejects.toThrow(
      /tolerance/,
    );
    await expect(verifyWebhook(body, { 'webhook-id': 'evt_1' }, secret)).rejects.toThrow(/Missing/);
  });

  it('agrees with the reference verifier on our own signature format', async () => {
    const headers = sign(secret);
    expect(new Webhook(secret).verify(body, headers)).toMatchObject({ id: 'evt_1' });
  });
});
