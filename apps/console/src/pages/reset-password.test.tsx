import { screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { contractError, sessionAs } from '../testing/fake-server';
import { renderConsole } from '../testing/render';
import { RESET_LINK_GONE } from './reset-password';

describe('password reset page', () => {
  it('sets the new password with the link’s token, signs in and opens the keys', async () => {
    const user = userEvent.setup();
    let session: ReturnType<typeof sessionAs> | null = null;
    const { server, location } = renderConsole('/reset-password/tok_1', {
      'session.get': () => session,
      'session.resetPassword': () => {
        session = sessionAs('owner');
        return session;
      },
      'keys.list': () => [],
    });
    await user.type(await screen.findByLabelText('New password'), 'correct horse battery');
    await user.click(screen.getByRole('button', { name: 'Set password and sign in' }));
    expect(await screen.findByRole('heading', { level: 1, name: 'API keys' })).toBeTruthy();
    expect(server.callsOf('session.resetPassword')).toEqual([
      { token: 'tok_1', new_password: 'correct horse battery' },
    ]);
    expect(location.history?.at(-1)).toBe('/api-keys');
  });

  it('checks the length before calling the server', async () => {
    const user = userEvent.setup();
    const { server } = renderConsole('/reset-password/tok_1', { 'session.get': () => null });
    await user.type(await screen.findByLabelText('New password'), 'short');
    await user.click(screen.getByRole('button', { name: 'Set password and sign in' }));
    expect(await screen.findByText('At least 10 characters')).toBeTruthy();
    expect(server.callsOf('session.resetPassword')).toEqual([]);
  });

  it('says so when the link is used or expired (404)', async () => {
    const user = userEvent.setup();
    renderConsole('/reset-password/tok_1', {
      'session.get': () => null,
      'session.resetPassword': () => {
        throw contractError('not_found', 'No such password reset link', 404);
      },
    });
    await user.type(await screen.findByLabelText('New password'), 'correct horse battery');
    await user.click(screen.getByRole('button', { name: 'Set password and sign in' }));
    expect((await screen.findByRole('alert')).textContent).toBe(RESET_LINK_GONE);
    expect(screen.queryByLabelText('New password')).toBeNull();
  });
});
