import { SignInInput } from '@convo/core';
import { zodResolver } from '@hookform/resolvers/zod';
import { useMutation } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { Link, Redirect, useLocation, useSearch } from 'wouter';
import { FormError, TextField } from '../components/field';
import { showServerError } from '../errors';
import { useSession, useSetSession } from '../session';
import { useTRPC } from '../trpc';

/** Where to go after signing in: `?next=/invite/…` keeps a visitor's place; anything else goes to the keys. */
export function nextPath(search: string): string {
  const next = new URLSearchParams(search).get('next');
  return next?.startsWith('/') && !next.startsWith('//') ? next : '/api-keys';
}

export function SignInPage() {
  const trpc = useTRPC();
  const session = useSession();
  const setSession = useSetSession();
  const [, navigate] = useLocation();
  const search = useSearch();
  const form = useForm<SignInInput>({ resolver: zodResolver(SignInInput), defaultValues: { email: '', password: '' } });
  const signIn = useMutation(
    trpc.session.signIn.mutationOptions({
      onSuccess: (next) => {
        setSession(next);
        navigate(nextPath(search), { replace: true });
      },
      onError: (error) => showServerError(error, form.setError, ['email', 'password']),
    }),
  );
  if (session.data && !signIn.isPending && !signIn.isSuccess) return <Redirect to={nextPath(search)} replace />;
  const { errors } = form.formState;
  return (
    <main className="auth-page">
      <h1>Sign in to Convo</h1>
      <form className="card" noValidate onSubmit={form.handleSubmit((values) => signIn.mutate(values))}>
        <FormError message={errors.root?.server?.message} />
        <TextField
          label="E-mail"
          type="email"
          autoComplete="email"
          error={errors.email?.message}
          {...form.register('email')}
        />
        <TextField
          label="Password"
          type="password"
          autoComplete="current-password"
          error={errors.password?.message}
          {...form.register('password')}
        />
        <button data-primary-action type="submit" className="button button-primary" disabled={signIn.isPending}>
          Sign in
        </button>
      </form>
      <p>
        No account yet? <Link href={`/sign-up${search ? `?${search}` : ''}`}>Create one</Link>
      </p>
    </main>
  );
}
