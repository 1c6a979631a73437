import { type TRPCLink, createTRPCClient, httpLink, httpSubscriptionLink, splitLink } from '@trpc/client';
import { createTRPCContext } from '@trpc/tanstack-react-query';
import type { inferRouterOutputs } from '@trpc/server';
import type { ConsoleRouter } from '@convo/api';

export type { ConsoleRouter };
export type Outputs = inferRouterOutputs<ConsoleRouter>;
export type Session = NonNullable<Outputs['session']['get']>;
export type Role = Session['role'];

export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<ConsoleRouter>();

/**
 * The one way to the server: the console router at /console/trpc, with the session cookie and the CSRF header;
 * subscriptions (the Events page's live events) as Server-Sent Events, which resume after the last event seen.
 */
export function serverLinks(): TRPCLink<ConsoleRouter>[] {
  return [
    splitLink({
      condition: (operation) => operation.type === 'subscription',
      true: httpSubscriptionLink({ url: '/console/trpc' }),
      false: httpLink({
        url: '/console/trpc',
        headers: { 'x-convo-csrf': '1' },
        fetch: (url, init) => fetch(url, { ...init, credentials: 'same-origin' }),
      }),
    }),
  ];
}

export function createConsoleClient(links: TRPCLink<ConsoleRouter>[] = serverLinks()) {
  return createTRPCClient<ConsoleRouter>({ links });
}
