import { SignUpInput } from '@convo/core';
import { useMutation } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { Link, useLocation, useSearch } from 'wouter';
import { FormError, TextField } from '../components/field';
import { showServerError } from '../errors';
import { contractResolver } from '../forms';
import { useSetSession } from '../session';
import { useTRPC } from '../trpc';
import { nextPath } from './sign-in';

/**
 * The form's fields: text inputs hold "" where the body leaves a field out (the account's name is left out only with an
 * invitation).
 */
interface SignUpValues {
  name: string;
  email: string;
  password: string;
  account_name: string;
}

const FIELDS = ['name', 'email', 'password', 'account_name'] as const;

/**
 * Creates a person and, without an invitation, their own account (they become its owner); with
 * an invitation, the person joins the inviting account instead.
 */
export function SignUpForm({ invitation }: { invitation?: string }) {
  const trpc = useTRPC();
  const setSession = useSetSession();
  const [, navigate] = useLocation();
  const search = useSearch();
  const form = useForm<SignUpValues, unknown, SignUpInput>({
    resolver: contractResolver<SignUpValues, SignUpInput>(
      SignUpInput,
      invitation ? ['name', 'account_name'] : ['name'],
    ),
    defaultValues: { name: '', email: '', password: '', account_name: '' },
  });
  const signUp = useMutation(
    trpc.session.signUp.mutationOptions({
      onSuccess: (next) => {
        setSession(next);
        navigate(invitation ? '/api-keys' : nextPath(search), { replace: true });
      },
      onError: (error) => showServerError(error, form.setError, FIELDS),
    }),
  );
  const { errors } = form.formState;
  const submit = form.handleSubmit((body) =>
    signUp.mutate(invitation ? { ...body, account_name: undefined, invitation } : body),
  );
  return (
    <form className="card" noValidate onSubmit={submit}>
      <FormError message={errors.root?.server?.message} />
      <TextField
        label="Your name (optional)"
        autoComplete="name"
        error={errors.name?.message}
        {...form.register('name')}
      />
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
        autoComplete="new-password"
        hint="At least 10 characters."
        error={errors.password?.message}
        {...form.register('password')}
      />
      {invitation ? null : (
        <TextField
          label="Account name"
          autoComplete="organization"
          error={errors.account_name?.message}
          {...form.register('account_name')}
        />
      )}
      <button data-primary-action type="submit" className="button button-primary" disabled={signUp.isPending}>
        {invitation ? 'Create account and join' : 'Create account'}
      </button>
    </form>
  );
}

export function SignUpPage() {
  const search = useSearch();
  return (
    <main className="auth-page">
      <h1>Create your Convo account</h1>
      <SignUpForm />
      <p>
        Already have one? <Link href={`/sign-in${search ? `?${search}` : ''}`}>Sign in</Link>
      </p>
    </main>
  );
}
