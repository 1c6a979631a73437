import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { sessionAs } from '../testing/fake-server';
import { renderConsole } from '../testing/render';

const at = '2026-11-20T10:00:00.000Z';
const page = <T,>(data: T[]) => ({ data, total: data.length, limit: 100, offset: 0, has_more: false });
const endpoint = (input: unknown) => ({
  id: 'whe_2',
  description: null,
  status: 'enabled',
  created_at: at,
  updated_at: at,
  ...((input as { body: object }).body ?? {}),
});

async function addEndpoint(user: ReturnType<typeof userEvent.setup>) {
  await user.click(await screen.findByRole('button', { name: 'Add endpoint' }));
  const dialog = await screen.findByRole('dialog', { name: 'Add endpoint' });
  await user.type(within(dialog).getByLabelText('URL'), 'https://example.com/hooks');
  await user.click(within(dialog).getByRole('checkbox', { name: 'order.placed' }));
  await user.click(within(dialog).getByRole('button', { name: 'Add endpoint' }));
}

describe('webhooks page', () => {
  it('shows the signing secret once when the creation made the account its webhook key', async () => {
    const user = userEvent.setup();
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const { server } = renderConsole('/webhooks', {
      'session.get': () => sessionAs('owner'),
      'webhookEndpoints.list': () => page([]),
      'webhookEndpoints.create': (input) => ({ ...endpoint(input), secret }),
    });
    await addEndpoint(user);

    const shown = await screen.findByRole('dialog', { name: 'Your signing secret' });
    expect(server.callsOf('webhookEndpoints.create')).toEqual([
      { body: { url: 'https://example.com/hooks', events: ['order.placed'] } },
    ]);
    expect((within(shown).getByLabelText('Signing secret') as HTMLInputElement).value).toBe(secret);
    await user.click(within(shown).getByRole('button', { name: 'Done' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(screen.queryByDisplayValue(secret)).toBeNull();
  });

  it('closes at once when the account already had a webhook key', async () => {
    const user = userEvent.setup();
    renderConsole('/webhooks', {
      'session.get': () => sessionAs('owner'),
      'webhookEndpoints.list': () => page([]),
      'webhookEndpoints.create': (input) => endpoint(input),
    });
    await addEndpoint(user);
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(await screen.findByText('Endpoint added')).toBeTruthy();
  });

  it('warns when the account has endpoints but no webhook key to sign their deliveries', async () => {
    const listed = {
      id: 'whe_1',
      url: 'https://example.com/hooks',
      events: ['*'],
      description: null,
      status: 'enabled',
      created_at: at,
      updated_at: at,
    };
    const webhookKey = {
      id: 'key_1',
      name: 'signing',
      type: 'webhook',
      redacted: 'whsec_…a1b2',
      last_four: 'a1b2',
      created_at: at,
      last_used_at: null,
      revoked_at: null,
      revoked_by: null,
    };
    const { unmount } = renderConsole('/webhooks', {
      'session.get': () => sessionAs('owner'),
      'webhookEndpoints.list': () => page([listed]),
      'keys.list': () => [],
    });
    expect((await screen.findByRole('alert')).textContent).toContain('no webhook key');
    unmount();
    // A revoked webhook key signs nothing: still the warning.
    const { unmount: unmountRevoked } = renderConsole('/webhooks', {
      'session.get': () => sessionAs('owner'),
      'webhookEndpoints.list': () => page([listed]),
      'keys.list': () => [{ ...webhookKey, revoked_at: at, revoked_by: 'olive@example.com' }],
    });
    expect((await screen.findByRole('alert')).textContent).toContain('no webhook key');
    unmountRevoked();
    renderConsole('/webhooks', {
      'session.get': () => sessionAs('owner'),
      'webhookEndpoints.list': () => page([listed]),
      'keys.list': () => [webhookKey],
    });
    await screen.findByText('https://example.com/hooks');
    expect(screen.queryByRole('alert')).toBeNull();
  });
});
