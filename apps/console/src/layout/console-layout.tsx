import { useMutation } from '@tanstack/react-query';
import { type ReactNode, createContext, useContext, useEffect, useId, useState } from 'react';
import { Link, Redirect, useLocation } from 'wouter';
import { consoleErrorOf } from '../errors';
import { useSession, useSetSession } from '../session';
import { type Session, useTRPC } from '../trpc';
import { ChangePasswordDialog } from './change-password-dialog';

const SessionContext = createContext<Session | null>(null);

/** The signed-in session; only inside ConsoleLayout, which renders nothing without one. */
export function useSignedIn(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSignedIn outside ConsoleLayout');
  return session;
}

const NAV = [
  { href: '/conversations', label: 'Conversations' },
  { href: '/contacts', label: 'Contacts' },
  { href: '/events', label: 'Events' },
  { href: '/workflows', label: 'Workflows' },
  { href: '/logs', label: 'Logs' },
  { href: '/api-keys', label: 'API keys' },
  { href: '/webhooks', label: 'Webhooks' },
  { href: '/channels', label: 'Channels' },
  { href: '/account', label: 'Account' },
];

/**
 * Every signed-in page: header (account, person, switcher, password, sign-out), left nav, main. Signed out → sign-in.
 */
export function ConsoleLayout({ children }: { children: ReactNode }) {
  const session = useSession();
  // On a phone the navigation and the person's menu fold behind one button; a page change folds them again.
  const [menuOpen, setMenuOpen] = useState(false);
  const [location] = useLocation();
  useEffect(() => setMenuOpen(false), [location]);
  if (session.isPending) {
    return (
      <p className="page-loading" role="status">
        Loading…
      </p>
    );
  }
  if (session.isError) {
    return (
      <main className="auth-page">
        <h1>Convo console</h1>
        <p role="alert">The console could not reach the server: {consoleErrorOf(session.error).message}</p>
      </main>
    );
  }
  if (!session.data) return <Redirect to="/sign-in" replace />;
  return (
    <SessionContext.Provider value={session.data}>
      <div className={menuOpen ? 'shell menu-open' : 'shell'}>
        <Header session={session.data} menuOpen={menuOpen} onMenu={() => setMenuOpen((open) => !open)} />
        <nav className="side-nav" id="console-nav" aria-label="Console">
          <ul>
            {NAV.map((item) => (
              <li key={item.href}>
                <NavLink href={item.href}>{item.label}</NavLink>
              </li>
            ))}
          </ul>
        </nav>
        <main className="content" id="main">
          {children}
        </main>
      </div>
    </SessionContext.Provider>
  );
}

function NavLink({ href, children }: { href: string; children: ReactNode }) {
  const [location] = useLocation();
  const active = location === href || location.startsWith(`${href}/`);
  return (
    <Link href={href} className={active ? 'nav-link active' : 'nav-link'} aria-current={active ? 'page' : undefined}>
      {children}
    </Link>
  );
}

function Header({ session, menuOpen, onMenu }: { session: Session; menuOpen: boolean; onMenu: () => void }) {
  const trpc = useTRPC();
  const setSession = useSetSession();
  const [, navigate] = useLocation();
  const [changingPassword, setChangingPassword] = useState(false);
  const switcherId = useId();
  const signOut = useMutation(
    trpc.session.signOut.mutationOptions({
      onSuccess: () => {
        setSession(null);
        navigate('/sign-in');
      },
    }),
  );
  const switchAccount = useMutation(
    trpc.session.switchAccount.mutationOptions({ onSuccess: (next) => setSession(next) }),
  );
  return (
    <header className="top-bar">
      <div className="brand">
        <span className="brand-name">Convo</span>
        {session.accounts.length > 1 ? (
          <span className="account-switcher">
            <label htmlFor={switcherId} className="visually-hidden">
              Account
            </label>
            <select
              id={switcherId}
              value={session.account.id}
              disabled={switchAccount.isPending}
              onChange={(event) => switchAccount.mutate({ account_id: event.currentTarget.value })}
            >
              {session.accounts.map((account) => (
                <option key={account.id} value={account.id}>
                  {account.name}
                </option>
              ))}
            </select>
          </span>
        ) : (
          <span className="account-name">{session.account.name}</span>
        )}
      </div>
      <button
        type="button"
        className="button button-quiet menu-button"
        aria-expanded={menuOpen}
        aria-controls="console-nav"
        onClick={onMenu}
      >
        Menu
      </button>
      <div className="user-menu">
        <span className="user-email">{session.user.email}</span>
        <button type="button" className="button button-quiet" onClick={() => setChangingPassword(true)}>
          Change password
        </button>
        <button
          type="button"
          className="button button-quiet"
          onClick={() => signOut.mutate()}
          disabled={signOut.isPending}
        >
          Sign out
        </button>
      </div>
      <ChangePasswordDialog isOpen={changingPassword} onClose={() => setChangingPassword(false)} />
    </header>
  );
}
