import { screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { contractError } from '../testing/fake-server';
import { renderConsole } from '../testing/render';

describe('sign-up form', () => {
  it("puts the server's refusal beside the field its details.field names", async () => {
    const user = userEvent.setup();
    const { server } = renderConsole('/sign-up', {
      'session.get': () => null,
      'session.signUp': () => {
        throw contractError('bad_request', 'An account with this e-mail address exists; sign in instead', 400, {
          field: 'email',
          constraint: 'unique',
        });
      },
    });
    await user.type(await screen.findByLabelText('E-mail'), 'ada@example.com');
    await user.type(screen.getByLabelText('Password'), 'correct horse battery');
    await user.type(screen.getByLabelText('Account name'), 'Acme');
    await user.click(screen.getByRole('button', { name: 'Create account' }));

    const message = await screen.findByText('An account with this e-mail address exists; sign in instead');
    const email = screen.getByLabelText('E-mail');
    expect(email.getAttribute('aria-invalid')).toBe('true');
    expect(email.getAttribute('aria-describedby')).toContain(message.id);
    expect(server.callsOf('session.signUp')).toEqual([
      { email: 'ada@example.com', password: 'correct horse battery', account_name: 'Acme' },
    ]);
  });

  it('checks the password length before calling the server', async () => {
    const user = userEvent.setup();
    const { server } = renderConsole('/sign-up', { 'session.get': () => null });
    await user.type(await screen.findByLabelText('E-mail'), 'ada@example.com');
    await user.type(screen.getByLabelText('Password'), 'short');
    await user.type(screen.getByLabelText('Account name'), 'Acme');
    await user.click(screen.getByRole('button', { name: 'Create account' }));
    expect(await screen.findByText('At least 10 characters')).toBeTruthy();
    expect(server.callsOf('session.signUp')).toEqual([]);
  });
});
