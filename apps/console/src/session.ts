import { matchQuery, useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback } from 'react';
import { type Session, useTRPC } from './trpc';

export function useSession() {
  const trpc = useTRPC();
  return useQuery(trpc.session.get.queryOptions());
}

/**
 * After sign-in, sign-up, an account switch or sign-out: the new session, and nothing kept from
 * the previous one (another person's or account's keys must not flash on screen).
 */
export function useSetSession() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return useCallback(
    (session: Session | null) => {
      const sessionFilter = trpc.session.get.queryFilter();
      queryClient.removeQueries({ predicate: (query) => !matchQuery(sessionFilter, query) });
      queryClient.setQueryData(trpc.session.get.queryKey(), session);
    },
    [queryClient, trpc],
  );
}

export const canManage = (session: Session) => session.role === 'owner' || session.role === 'admin';
