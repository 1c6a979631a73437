import { ResetPasswordInput } from '@convo/core';
import { zodResolver } from '@hookform/resolvers/zod';
import { useMutation } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { Link, useLocation } from 'wouter';
import { FormError, TextField } from '../components/field';
import { consoleErrorOf, showServerError } from '../errors';
import { useSetSession } from '../session';
import { useTRPC } from '../trpc';

export const RESET_LINK_GONE = 'This link is used or expired; ask your operator for a new one.';

/**
 * `/reset-password/:token`, the link `convo-server users reset-password` prints: a new password,
 * which signs the person in (every other session of theirs ends) and opens the keys.
 */
export function ResetPasswordPage({ token }: { token: string }) {
  const trpc = useTRPC();
  const setSession = useSetSession();
  const [, navigate] = useLocation();
  const form = useForm<ResetPasswordInput>({
    resolver: zodResolver(ResetPasswordInput),
    defaultValues: { token, new_password: '' },
  });
  const reset = useMutation(
    trpc.session.resetPassword.mutationOptions({
      onSuccess: (next) => {
        setSession(next);
        navigate('/api-keys', { replace: true });
      },
      onError: (error) => {
        if (consoleErrorOf(error).httpStatus !== 404) showServerError(error, form.setError, ['new_password']);
      },
    }),
  );
  const gone = reset.isError && consoleErrorOf(reset.error).httpStatus === 404;
  const { errors } = form.formState;
  return (
    <main className="auth-page">
      <h1>Choose a new password</h1>
      {gone ? (
        <div className="card">
          <p className="form-error" role="alert">
            {RESET_LINK_GONE}
          </p>
          <p>
            Remember your password? <Link href="/sign-in">Sign in</Link>
          </p>
        </div>
      ) : (
        <form className="card" noValidate onSubmit={form.handleSubmit((values) => reset.mutate(values))}>
          <FormError message={errors.root?.server?.message ?? errors.token?.message} />
          <TextField
            label="New password"
            type="password"
            autoComplete="new-password"
            hint="At least 10 characters. Your other sessions are signed out."
            error={errors.new_password?.message}
            {...form.register('new_password')}
          />
          <button data-primary-action type="submit" className="button button-primary" disabled={reset.isPending}>
            Set password and sign in
          </button>
        </form>
      )}
    </main>
  );
}
