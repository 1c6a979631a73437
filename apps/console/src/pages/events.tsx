import { EVENT_TYPES } from '@convo/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useSubscription } from '@trpc/tanstack-react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { ListSection } from '../components/list-section';
import { consoleErrorOf } from '../errors';
import { formatDateTime } from '../format';
import { useTRPC } from '../trpc';

const PAGE_SIZE = 20;

type EventType = (typeof EVENT_TYPES)[number];

interface ListedEvent {
  id: string;
  type: string;
  created_at: string;
}

/** An event: its JSON, and once opened the deliveries it caused with their attempts. */
function EventDetails({ event }: { event: ListedEvent }) {
  const trpc = useTRPC();
  const [open, setOpen] = useState(false);
  const deliveries = useQuery({
    ...trpc.events.deliveries.queryOptions({ event_id: event.id }),
    enabled: open,
  });
  return (
    <details onToggle={(toggled) => setOpen(toggled.currentTarget.open)}>
      <summary>
        <span className="mono">{event.type}</span> <span className="muted">{event.id}</span>{' '}
        {formatDateTime(event.created_at)}
      </summary>
      <pre className="json">{JSON.stringify(event, null, 2)}</pre>
      <h3>Deliveries</h3>
      {!open ? null : deliveries.isPending ? (
        <p role="status">Loading deliveries…</p>
      ) : deliveries.isError ? (
        <p role="alert">Could not load the deliveries: {consoleErrorOf(deliveries.error).message}</p>
      ) : deliveries.data.length === 0 ? (
        <p>No endpoint took this event.</p>
      ) : (
        <ul className="deliveries">
          {deliveries.data.map((delivery) => (
            <li key={delivery.id}>
              <Link href={`/webhooks/${delivery.endpoint_id}`}>{delivery.endpoint_id}</Link>{' '}
              <span className={`badge badge-${delivery.status}`}>{delivery.status}</span>
              <ol>
                {delivery.attempts.map((attempt) => (
                  <li key={attempt.at}>
                    {formatDateTime(attempt.at)}: {attempt.status_code ?? 'no response'} in {attempt.duration_ms} ms
                    {attempt.error ? ` (${attempt.error})` : ''}
                  </li>
                ))}
              </ol>
            </li>
          ))}
        </ul>
      )}
    </details>
  );
}

/** `/events`: the account's event log, newest first, by type; each event opens to its JSON as webhooks carry it. */
export function EventsPage() {
  const trpc = useTRPC();
  const [type, setType] = useState<EventType | ''>('');
  const [offset, setOffset] = useState(0);
  const events = useQuery(
    trpc.events.list.queryOptions({ query: { limit: PAGE_SIZE, offset, ...(type ? { type } : {}) } }),
  );
  // The list follows the account's event stream: each new event reloads the page shown, so it appears at the top.
  const queryClient = useQueryClient();
  const live = useSubscription(
    trpc.events.live.subscriptionOptions(
      {},
      { onData: () => void queryClient.invalidateQueries({ queryKey: trpc.events.list.queryKey() }) },
    ),
  );
  return (
    <>
      <h1>Events</h1>
      <p className="muted" role="status">
        {live.status === 'pending'
          ? 'Live: new events appear as they happen.'
          : live.status === 'error'
            ? `Not live: ${consoleErrorOf(live.error).message}`
            : 'Connecting to the live events…'}
      </p>
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
      <ListSection
        query={events}
        noun="events"
        empty="No events yet."
        pager={{ label: 'Event pages', offset, size: PAGE_SIZE, onOffset: setOffset }}
      >
        {(records) => (
          <>
            <ul className="event-list">
              {records.map((event) => (
                <li key={event.id}>
                  <EventDetails event={event} />
                </li>
              ))}
            </ul>
          </>
        )}
      </ListSection>
    </>
  );
}
