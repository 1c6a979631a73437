import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { sessionAs } from '../testing/fake-server';
import { renderConsole } from '../testing/render';

const backendKey = {
  id: 'key_1',
  name: 'backend',
  type: 'full_access',
  redacted: 'convo_sk_…a1b2',
  last_four: 'a1b2',
  created_at: '2026-11-20T10:00:00.000Z',
  last_used_at: null,
  revoked_at: null,
  revoked_by: null,
};

const oldKey = {
  ...backendKey,
  id: 'key_0',
  name: 'legacy',
  last_four: 'ffff',
  revoked_at: '2026-11-21T09:30:00.000Z',
  revoked_by: 'olive@example.com',
};

describe('API keys page', () => {
  it('shows a new key once, with a warning and a copy button, and forgets it on Done', async () => {
    const user = userEvent.setup();
    const value = 'convo_rk_9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8';
    const { server } = renderConsole('/api-keys', {
      'session.get': () => sessionAs('owner'),
      'keys.list': () => [],
      'keys.create': (input) => ({ ...backendKey, id: 'key_2', ...(input as object), last_four: 'a1d8', key: value }),
    });

    await user.click(await screen.findByRole('button', { name: 'Generate key' }));
    const dialog = await screen.findByRole('dialog', { name: 'Generate key' });
    await user.type(within(dialog).getByLabelText('Name'), 'reporting');
    await user.click(within(dialog).getByRole('radio', { name: /Read-only/ }));
    await user.click(within(dialog).getByRole('button', { name: 'Generate key' }));

    const shown = await screen.findByRole('dialog', { name: 'Your new key' });
    expect(server.callsOf('keys.create')).toEqual([{ name: 'reporting', type: 'read_only' }]);
    expect(within(shown).getByText('This key is shown only once. Store it now; you cannot see it again.')).toBeTruthy();
    const field = within(shown).getByLabelText('Key reporting') as HTMLInputElement;
    expect(field.value).toBe(value);
    expect(field.readOnly).toBe(true);

    await user.click(within(shown).getByRole('button', { name: /^Copy/ }));
    expect(await navigator.clipboard.readText()).toBe(value);
    expect(await screen.findByText('Copied')).toBeTruthy();

    await user.click(within(shown).getByRole('button', { name: 'Done' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(screen.queryByDisplayValue(value)).toBeNull();

    await user.click(screen.getByRole('button', { name: 'Generate key' }));
    const again = await screen.findByRole('dialog', { name: 'Generate key' });
    expect(within(again).queryByDisplayValue(value)).toBeNull();
    expect((within(again).getByLabelText('Name') as HTMLInputElement).value).toBe('');
  });

  it('lists keys by name, type, last four, creation and last use', async () => {
    renderConsole('/api-keys', { 'session.get': () => sessionAs('owner'), 'keys.list': () => [backendKey] });
    const row = (await screen.findByRole('cell', { name: 'backend' })).closest('tr') as HTMLElement;
    expect(within(row).getByText('Full access')).toBeTruthy();
    expect(within(row).getByText('…a1b2')).toBeTruthy();
    expect(within(row).getByText('Never')).toBeTruthy();
  });

  it('keeps revoked keys listed under their filter, with when and by whom', async () => {
    const user = userEvent.setup();
    renderConsole('/api-keys', { 'session.get': () => sessionAs('owner'), 'keys.list': () => [backendKey, oldKey] });
    expect(await screen.findByRole('cell', { name: 'backend' })).toBeTruthy();
    expect(screen.queryByRole('cell', { name: 'legacy' })).toBeNull();

    await user.click(screen.getByRole('radio', { name: 'Revoked' }));
    const row = (await screen.findByRole('cell', { name: 'legacy' })).closest('tr') as HTMLElement;
    expect(within(row).getByText(/^Revoked .+ by olive@example\.com$/)).toBeTruthy();
    expect(within(row).queryByRole('button')).toBeNull();
    expect(screen.queryByRole('cell', { name: 'backend' })).toBeNull();

    await user.click(screen.getByRole('radio', { name: 'All' }));
    expect(await screen.findByRole('cell', { name: 'backend' })).toBeTruthy();
    expect(screen.getByRole('cell', { name: 'legacy' })).toBeTruthy();
  });

  it('revokes only after confirmation', async () => {
    const user = userEvent.setup();
    const { server } = renderConsole('/api-keys', {
      'session.get': () => sessionAs('admin'),
      'keys.list': () => [backendKey],
      'keys.revoke': (input) => ({ id: (input as { id: string }).id, revoked_at: '2026-11-26T10:00:00.000Z' }),
    });

    await user.click(await screen.findByRole('button', { name: 'Revoke backend' }));
    let confirm = await screen.findByRole('alertdialog', { name: 'Revoke key' });
    expect(within(confirm).getByText('Revoke key backend? Apps using it stop working immediately.')).toBeTruthy();
    await user.click(within(confirm).getByRole('button', { name: 'Cancel' }));
    await waitFor(() => expect(screen.queryByRole('alertdialog')).toBeNull());
    expect(server.callsOf('keys.revoke')).toEqual([]);

    await user.click(screen.getByRole('button', { name: 'Revoke backend' }));
    confirm = await screen.findByRole('alertdialog', { name: 'Revoke key' });
    await user.click(within(confirm).getByRole('button', { name: 'Revoke' }));
    expect(await screen.findByText('Key revoked')).toBeTruthy();
    expect(server.callsOf('keys.revoke')).toEqual([{ id: 'key_1' }]);
    await waitFor(() => expect(screen.queryByRole('alertdialog')).toBeNull());
  });

  it('gives members the list without any control', async () => {
    renderConsole('/api-keys', { 'session.get': () => sessionAs('member'), 'keys.list': () => [backendKey] });
    expect(await screen.findByRole('cell', { name: 'backend' })).toBeTruthy();
    expect(screen.getByText('Only owners and admins can generate and revoke keys.')).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Generate key' })).toBeNull();
    expect(screen.queryByRole('button', { name: /Revoke/ })).toBeNull();
  });

  it('sends a signed-out visitor to sign in', async () => {
    const { location } = renderConsole('/api-keys', { 'session.get': () => null });
    expect(await screen.findByRole('heading', { name: 'Sign in to Convo' })).toBeTruthy();
    expect(location.history?.at(-1)).toBe('/sign-in');
  });
});
