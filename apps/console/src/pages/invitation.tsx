import { useMutation, useQuery } from '@tanstack/react-query';
import { Link, useLocation } from 'wouter';
import { consoleErrorOf } from '../errors';
import { formatDateTime } from '../format';
import { useSession, useSetSession } from '../session';
import { useTRPC } from '../trpc';
import { SignUpForm } from './sign-up';

/**
 * `/invite/:token`: who invites, as what; accept when signed in, else sign up with the token (or sign in and come
 * back).
 */
export function InvitationPage({ token }: { token: string }) {
  const trpc = useTRPC();
  const session = useSession();
  const setSession = useSetSession();
  const [, navigate] = useLocation();
  const invitation = useQuery(trpc.invitations.lookup.queryOptions({ token }, { retry: false }));
  const accept = useMutation(
    trpc.invitations.accept.mutationOptions({
      onSuccess: (next) => {
        setSession(next);
        navigate('/api-keys', { replace: true });
      },
    }),
  );
  if (invitation.isPending || session.isPending) {
    return (
      <main className="auth-page">
        <h1>Invitation</h1>
        <p role="status">Loading…</p>
      </main>
    );
  }
  if (invitation.isError) {
    return (
      <main className="auth-page">
        <h1>Invitation</h1>
        <p role="alert">This invitation cannot be used: {consoleErrorOf(invitation.error).message}</p>
        <p>Ask for a new one. Invitations expire after 7 days.</p>
      </main>
    );
  }
  const { account_name, role, expires_at } = invitation.data;
  return (
    <main className="auth-page">
      <h1>Join {account_name}</h1>
      <p>
        You are invited to <strong>{account_name}</strong> as <strong>{role}</strong>. The invitation expires{' '}
        {formatDateTime(expires_at)}.
      </p>
      {session.data ? (
        <div className="card">
          <p>
            Signed in as <strong>{session.data.user.email}</strong>.
          </p>
          {accept.isError ? (
            <p className="form-error" role="alert">
              {consoleErrorOf(accept.error).message}
            </p>
          ) : null}
          <button
            data-primary-action
            type="button"
            className="button button-primary"
            onClick={() => accept.mutate({ token })}
            disabled={accept.isPending}
          >
            Accept invitation
          </button>
        </div>
      ) : (
        <>
          <h2>Create your login</h2>
          <SignUpForm invitation={token} />
          <p>
            Already have a Convo login?{' '}
            <Link href={`/sign-in?next=${encodeURIComponent(`/invite/${token}`)}`}>Sign in first</Link>, then come back
            here to accept.
          </p>
        </>
      )}
    </main>
  );
}
