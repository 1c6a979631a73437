import { screen } from '@testing-library/react';
import axe from 'axe-core';
import { describe, expect, it } from 'vitest';
import { sessionAs } from '../testing/fake-server';
import { renderConsole } from '../testing/render';

const at = '2026-11-20T10:00:00.000Z';
const endpoint = {
  id: 'whe_1',
  url: 'https://example.com/hooks',
  events: ['*'],
  description: null,
  status: 'enabled',
  created_at: at,
  updated_at: at,
};
const page = <T,>(data: T[]) => ({ data, total: data.length, limit: 100, offset: 0, has_more: false });

const server = {
  'session.get': () => sessionAs('owner', 2),
  'keys.list': () => [
    {
      id: 'key_1',
      name: 'backend',
      type: 'webhook',
      redacted: 'whsec_…a1b2',
      last_four: 'a1b2',
      created_at: at,
      last_used_at: at,
      revoked_at: null,
      revoked_by: null,
    },
  ],
  'webhookEndpoints.list': () => page([endpoint]),
  'webhookEndpoints.retrieve': () => endpoint,
  'webhookEndpoints.listDeliveries': () =>
    page([
      {
        id: 'whd_1',
        event_id: 'evt_1',
        event_type: 'message.received',
        endpoint_id: 'whe_1',
        status: 'failed',
        attempts: [{ at, status_code: 500, duration_ms: 120, error: 'HTTP 500' }],
        next_attempt_at: null,
        created_at: at,
      },
    ]),
  'channels.list': () =>
    page([
      {
        id: 'ch_1',
        platform: 'whatsapp',
        name: 'WhatsApp 1065',
        external_id: '1065',
        status: 'active',
        webhook_url: 'https://convo.example/hooks/meta/ch_1',
        verify_token: 'x'.repeat(32),
        last_error: null,
        created_at: at,
        updated_at: at,
      },
    ]),
  'account.get': () => sessionAs('owner').account,
  'members.list': () => [{ user_id: 'usr_1', email: 'ada@example.com', name: 'Ada', role: 'owner', created_at: at }],
  'invitations.list': () => [{ id: 'inv_1', role: 'member', created_at: at, expires_at: at }],
  'invitations.lookup': () => ({ account_name: 'Acme', role: 'member', expires_at: at }),
};

/** axe-core's serious and critical findings (jsdom has no layout: contrast is checked in a browser, not here). */
async function seriousViolations() {
  const results = await axe.run(document.body, { rules: { 'color-contrast': { enabled: false } } });
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => violation.id);
}

describe('accessibility of each page (axe-core)', () => {
  it.each([
    ['/api-keys', 'API keys'],
    ['/webhooks', 'Webhooks'],
    ['/webhooks/whe_1', 'Webhook endpoint'],
    ['/channels', 'Channels'],
    ['/account', 'Account'],
  ])('%s', async (path, heading) => {
    renderConsole(path, server);
    await screen.findByRole('heading', { level: 1, name: heading });
    await screen.findAllByRole('table');
    expect(await seriousViolations()).toEqual([]);
  });

  it.each([
    ['/sign-in', 'Sign in to Convo'],
    ['/sign-up', 'Create your Convo account'],
    ['/invite/tok_1', 'Join Acme'],
    ['/reset-password/tok_1', 'Choose a new password'],
  ])('%s', async (path, heading) => {
    renderConsole(path, { ...server, 'session.get': () => null });
    await screen.findByRole('heading', { level: 1, name: heading });
    expect(await seriousViolations()).toEqual([]);
  });
});
