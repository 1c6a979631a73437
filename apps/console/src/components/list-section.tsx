import type { UseQueryResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { consoleErrorOf } from '../errors';
import { Pager } from './pager';

/** A page of a list as the API answers it. */
interface Envelope<T> {
  data: T[];
  total: number;
  has_more: boolean;
}

/**
 * One list of a page in its four states: loading, its error, empty, or its records (with Newer /
 * Older under them when `pager` is given). `noun` names the records in the messages: "Loading
 * workflows…", "Could not load the workflows: …".
 */
export function ListSection<T>({
  query,
  noun,
  empty,
  pager,
  children,
}: {
  query: UseQueryResult<Envelope<T>, unknown>;
  noun: string;
  empty: ReactNode;
  pager?: { label: string; offset: number; size: number; onOffset: (offset: number) => void };
  children: (records: T[]) => ReactNode;
}) {
  if (query.isPending) return <p role="status">Loading {noun}…</p>;
  if (query.isError)
    return (
      <p role="alert">
        Could not load the {noun}: {consoleErrorOf(query.error).message}
      </p>
    );
  const page = query.data;
  if (page.data.length === 0) return <p>{empty}</p>;
  return (
    <>
      {children(page.data)}
      {pager ? <Pager {...pager} shown={page.data.length} total={page.total} hasMore={page.has_more} /> : null}
    </>
  );
}
