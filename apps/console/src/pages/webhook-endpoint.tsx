import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { ListSection } from '../components/list-section';
import { useToast } from '../components/toasts';
import { consoleErrorOf } from '../errors';
import { formatDateTime } from '../format';
import { useSignedIn } from '../layout/console-layout';
import { canManage } from '../session';
import { useTRPC } from '../trpc';
import { eventsLabel } from './webhooks';
import { DataTable } from '../components/data-table';

const PAGE_SIZE = 20;

/** `/webhooks/:id`: the endpoint, its deliveries newest first with every attempt, and Retry. */
export function WebhookEndpointPage({ id }: { id: string }) {
  const session = useSignedIn();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const toast = useToast();
  const [offset, setOffset] = useState(0);
  const endpoint = useQuery(trpc.webhookEndpoints.retrieve.queryOptions({ params: { id } }));
  const deliveries = useQuery(
    trpc.webhookEndpoints.listDeliveries.queryOptions({ params: { id }, query: { limit: PAGE_SIZE, offset } }),
  );
  const retry = useMutation(
    trpc.webhookEndpoints.retryDelivery.mutationOptions({
      onSuccess: async () => {
        toast('Retry queued');
        await queryClient.invalidateQueries(trpc.webhookEndpoints.listDeliveries.queryFilter());
      },
      onError: (error) => toast(consoleErrorOf(error).message),
    }),
  );
  const sendTest = useMutation(
    trpc.webhookEndpoints.test.mutationOptions({
      onSuccess: async (delivery) => {
        toast(delivery.status === 'succeeded' ? 'Test event delivered' : `Test event ${delivery.status}`);
        await queryClient.invalidateQueries(trpc.webhookEndpoints.listDeliveries.queryFilter());
      },
      onError: (error) => toast(consoleErrorOf(error).message),
    }),
  );
  const manager = canManage(session);
  return (
    <>
      <p className="breadcrumb">
        <Link href="/webhooks">← Webhooks</Link>
      </p>
      <div className="page-header">
        <h1>Webhook endpoint</h1>
        {manager ? (
          <button
            data-primary-action
            type="button"
            className="button button-primary"
            disabled={sendTest.isPending}
            onClick={() => sendTest.mutate({ params: { id } })}
          >
            Send test event
          </button>
        ) : null}
      </div>
      {endpoint.isPending ? (
        <p role="status">Loading…</p>
      ) : endpoint.isError ? (
        <p role="alert">Could not load the endpoint: {consoleErrorOf(endpoint.error).message}</p>
      ) : (
        <dl className="facts">
          <dt>URL</dt>
          <dd className="mono">{endpoint.data.url}</dd>
          <dt>Events</dt>
          <dd>{eventsLabel(endpoint.data.events)}</dd>
          <dt>Status</dt>
          <dd>{endpoint.data.status === 'enabled' ? 'Enabled' : 'Disabled'}</dd>
          {endpoint.data.description ? (
            <>
              <dt>Description</dt>
              <dd>{endpoint.data.description}</dd>
            </>
          ) : null}
        </dl>
      )}
      <h2>Deliveries</h2>
      <ListSection
        query={deliveries}
        noun="deliveries"
        empty="No deliveries yet."
        pager={{ label: 'Deliveries pages', offset, size: PAGE_SIZE, onOffset: setOffset }}
      >
        {(records) => (
          <>
            <DataTable
              caption="Deliveries"
              rows={records}
              rowKey={(delivery) => delivery.id}
              columns={[
                {
                  label: 'Event',
                  cell: (delivery) => (
                    <>
                      <span className="mono">{delivery.event_type}</span>
                      <div className="muted mono">{delivery.event_id}</div>
                    </>
                  ),
                },
                {
                  label: 'Status',
                  cell: (delivery) => <span className={`badge badge-${delivery.status}`}>{delivery.status}</span>,
                },
                { label: 'Created', cell: (delivery) => formatDateTime(delivery.created_at) },
                {
                  label: 'Attempts',
                  cell: (delivery) =>
                    delivery.attempts.length === 0 ? (
                      'None yet'
                    ) : (
                      <ol className="attempts">
                        {delivery.attempts.map((attempt) => (
                          <li key={attempt.at}>
                            {formatDateTime(attempt.at)}: {attempt.status_code ?? 'no response'} in{' '}
                            {attempt.duration_ms} ms
                            {attempt.error ? <span className="muted"> ({attempt.error})</span> : null}
                          </li>
                        ))}
                      </ol>
                    ),
                },
                { label: 'Next attempt', cell: (delivery) => formatDateTime(delivery.next_attempt_at, '—') },
              ]}
              actions={
                manager &&
                ((delivery) => (
                  <button
                    type="button"
                    className="button button-small"
                    disabled={retry.isPending}
                    onClick={() => retry.mutate({ params: { id, delivery_id: delivery.id } })}
                    aria-label={`Retry delivery of ${delivery.event_type} ${delivery.event_id}`}
                  >
                    Retry
                  </button>
                ))
              }
            />
          </>
        )}
      </ListSection>
    </>
  );
}
