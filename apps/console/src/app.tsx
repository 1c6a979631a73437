import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { type TRPCLink, TRPCClientError } from '@trpc/client';
import { type ReactNode, useState } from 'react';
import { Redirect, Route, Router, Switch } from 'wouter';
import { ToastProvider } from './components/toasts';
import { consoleErrorOf } from './errors';
import { ConsoleLayout } from './layout/console-layout';
import { AccountPage } from './pages/account';
import { ApiKeysPage } from './pages/api-keys';
import { ChannelsPage } from './pages/channels';
import { ContactPage, ContactsPage } from './pages/contacts';
import { ConversationPage, ConversationsPage } from './pages/conversations';
import { EventsPage } from './pages/events';
import { LogPage, LogsPage } from './pages/logs';
import { WorkflowPage, WorkflowsPage } from './pages/workflows';
import { InvitationPage } from './pages/invitation';
import { NotFoundPage } from './pages/not-found';
import { ResetPasswordPage } from './pages/reset-password';
import { SignInPage } from './pages/sign-in';
import { SignUpPage } from './pages/sign-up';
import { WebhookEndpointPage } from './pages/webhook-endpoint';
import { WebhooksPage } from './pages/webhooks';
import { type ConsolePath, CONSOLE_ROUTES } from './routes';
import { type ConsoleRouter, TRPCProvider, createConsoleClient } from './trpc';

export function createQueryClient() {
  return new QueryClient({
    defaultOptions: {
      queries: {
        // A refusal (4xx) stays a refusal; only a server or network failure is worth another try.
        retry: (failures, error) =>
          failures < 2 && !(error instanceof TRPCClientError && (consoleErrorOf(error).httpStatus ?? 500) < 500),
        refetchOnWindowFocus: false,
      },
    },
  });
}

interface AppProps {
  /** Tests pass their own links (a fake server) and a memory location hook. */
  links?: TRPCLink<ConsoleRouter>[];
  routerHook?: Parameters<typeof Router>[0]['hook'];
}

export function App({ links, routerHook }: AppProps) {
  const [queryClient] = useState(createQueryClient);
  const [trpcClient] = useState(() => createConsoleClient(links));
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        <ToastProvider>
          <Router base={routerHook ? '' : '/console'} {...(routerHook ? { hook: routerHook } : {})}>
            <Routes />
          </Router>
        </ToastProvider>
      </TRPCProvider>
    </QueryClientProvider>
  );
}

/** What each route of CONSOLE_ROUTES renders, given its path parameters. */
const PAGES: Record<ConsolePath, (params: Record<string, string>) => ReactNode> = {
  '/sign-in': () => <SignInPage />,
  '/sign-up': () => <SignUpPage />,
  '/invite/:token': (params) => <InvitationPage token={params.token as string} />,
  '/reset-password/:token': (params) => <ResetPasswordPage token={params.token as string} />,
  '/conversations': () => <ConversationsPage />,
  '/conversations/:id': (params) => <ConversationPage id={params.id as string} />,
  '/contacts': () => <ContactsPage />,
  '/contacts/:id': (params) => <ContactPage id={params.id as string} />,
  '/events': () => <EventsPage />,
  '/workflows': () => <WorkflowsPage />,
  '/workflows/:id': (params) => <WorkflowPage id={params.id as string} />,
  '/logs': () => <LogsPage />,
  '/logs/:request_id': (params) => <LogPage requestId={params.request_id as string} />,
  '/api-keys': () => <ApiKeysPage />,
  '/webhooks': () => <WebhooksPage />,
  '/webhooks/:id': (params) => <WebhookEndpointPage id={params.id as string} />,
  '/channels': () => <ChannelsPage />,
  '/account': () => <AccountPage />,
};

const routesOf = (signedIn: boolean) =>
  CONSOLE_ROUTES.filter((route) => route.signedIn === signedIn).map(({ path }) => (
    <Route key={path} path={path}>
      {(params) => PAGES[path](params as Record<string, string>)}
    </Route>
  ));

export function Routes() {
  return (
    <Switch>
      {routesOf(false)}
      <Route>
        <ConsoleLayout>
          <Switch>
            <Route path="/">
              <Redirect to="/api-keys" replace />
            </Route>
            {routesOf(true)}
            <Route component={NotFoundPage} />
          </Switch>
        </ConsoleLayout>
      </Route>
    </Switch>
  );
}
