import { EVENT_TYPES } from '@convo/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Pager } from '../components/pager';
import { consoleErrorOf } from '../errors';
import { formatDateTime } from '../format';
import { useTRPC } from '../trpc';

const PAGE_SIZE = 20;

type EventType = (typeof EVENT_TYPES)[number];

/** `/events`: the account's event log, newest first, by type; each event opens to its JSON as webhooks carry it. */
export function EventsPage() {
  const trpc = useTRPC();
  const [type, setType] = useState<EventType | ''>('');
  const [offset, setOffset] = useState(0);
  const events = useQuery(
    trpc.events.list.queryOptions({ query: { limit: PAGE_SIZE, offset, ...(type ? { type } : {}) } }),
  );
  return (
    <>
      <h1>Events</h1>
      <form className="filters" onSubmit={(event) => event.preventDefault()}>
        <label>
          Type
          <select
            value={type}
            onChange={(event) => {
              setType(event.currentTarget.value as EventType | '');
              setOffset(0);
            }}
          >
            <option value="">Any</option>
            {EVENT_TYPES.map((value) => (
              <option key={value} value={value}>
                {value}
              </option>
            ))}
          </select>
        </label>
      </form>
      {events.isPending ? (
        <p role="status">Loading events…</p>
      ) : events.isError ? (
        <p role="alert">Could not load the events: {consoleErrorOf(events.error).message}</p>
      ) : events.data.data.length === 0 ? (
        <p>No events yet.</p>
      ) : (
        <>
          <ul className="event-list">
            {events.data.data.map((event) => (
              <li key={event.id}>
                <details>
                  <summary>
                    <span className="mono">{event.type}</span> <span className="muted">{event.id}</span>{' '}
                    {formatDateTime(event.created_at)}
                  </summary>
                  <pre className="json">{JSON.stringify(event, null, 2)}</pre>
                </details>
              </li>
            ))}
          </ul>
          <Pager
            label="Event pages"
            offset={offset}
            size={PAGE_SIZE}
            shown={events.data.data.length}
            total={events.data.total}
            hasMore={events.data.has_more}
            onOffset={setOffset}
          />
        </>
      )}
    </>
  );
}
