import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { ListSection } from '../components/list-section';
import { consoleErrorOf } from '../errors';
import { formatDateTime } from '../format';
import { useTRPC } from '../trpc';
import { DataTable } from '../components/data-table';

const PAGE_SIZE = 25;

const STATUS_CLASSES = { '': 'Any', '2': 'Succeeded (2xx)', '4': 'Failed (4xx)', '5': 'Server errors (5xx)' } as const;
type StatusClass = keyof typeof STATUS_CLASSES;

/** `/logs`: the account's API requests, newest first, as Stripe's request log. */
export function LogsPage() {
  const trpc = useTRPC();
  const [statusClass, setStatusClass] = useState<StatusClass>('');
  const [path, setPath] = useState('');
  const [keyId, setKeyId] = useState('');
  const [requestId, setRequestId] = useState('');
  const [offset, setOffset] = useState(0);
  const keys = useQuery(trpc.keys.list.queryOptions());
  const logs = useQuery({
    ...trpc.requestLogs.list.queryOptions({
      limit: PAGE_SIZE,
      offset,
      ...(statusClass ? { status_class: Number(statusClass) as 2 | 4 | 5 } : {}),
      ...(path.trim() ? { path: path.trim() } : {}),
      ...(keyId ? { key_id: keyId } : {}),
      ...(requestId.trim() ? { request_id: requestId.trim() } : {}),
    }),
    refetchInterval: 5_000,
  });
  const set =
    <T,>(change: (value: T) => void) =>
    (value: T) => {
      change(value);
      setOffset(0);
    };
  return (
    <>
      <h1>Logs</h1>
      <p className="lead">Every API request of this account's keys in the last days, newest first.</p>
      <form className="filters" onSubmit={(event) => event.preventDefault()}>
        <label>
          Status
          <select
            value={statusClass}
            onChange={(event) => set(setStatusClass)(event.currentTarget.value as StatusClass)}
          >
            {Object.entries(STATUS_CLASSES).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Path
          <input
            value={path}
            placeholder="/v1/contacts"
            onChange={(event) => set(setPath)(event.currentTarget.value)}
          />
        </label>
        <label>
          Key
          <select value={keyId} onChange={(event) => set(setKeyId)(event.currentTarget.value)}>
            <option value="">Any</option>
            {(keys.data ?? []).map((key) => (
              <option key={key.id} value={key.id}>
                {key.name ?? key.id} (…{key.last_four})
              </option>
            ))}
          </select>
        </label>
        <label>
          Request id
          <input value={requestId} onChange={(event) => set(setRequestId)(event.currentTarget.value)} />
        </label>
      </form>
      <ListSection
        query={logs}
        noun="requests"
        empty="No requests match."
        pager={{ label: 'Log pages', offset, size: PAGE_SIZE, onOffset: setOffset }}
      >
        {(records) => (
          <>
            <DataTable
              caption="API requests"
              rows={records}
              rowKey={(line) => line.id}
              columns={[
                {
                  label: 'Status',
                  cell: (line) => (
                    <span className={line.status >= 400 ? 'badge badge-failed' : 'badge badge-succeeded'}>
                      {line.status}
                    </span>
                  ),
                },
                {
                  label: 'Request',
                  className: 'mono',
                  cell: (line) => (
                    <Link href={`/logs/${encodeURIComponent(line.request_id)}`}>
                      {line.method} {line.path}
                      {line.query ? `?${line.query}` : ''}
                    </Link>
                  ),
                },
                {
                  label: 'Key',
                  cell: (line) => (line.key ? `${line.key.name ?? line.key.id} (…${line.key.last_four})` : '—'),
                },
                { label: 'Duration', cell: (line) => `${line.duration_ms} ms` },
                { label: 'Time', cell: (line) => formatDateTime(line.created_at) },
              ]}
            />
          </>
        )}
      </ListSection>
    </>
  );
}

/** `/logs/:request_id`: one request, reachable from any error's request id, with what failed and what was sent. */
export function LogPage({ requestId }: { requestId: string }) {
  const trpc = useTRPC();
  // A request of a moment ago may not be written yet (the server writes the log in batches, within a second):
  // a 404 is asked again a few times before the page says so.
  const line = useQuery({
    ...trpc.requestLogs.retrieve.queryOptions({ request_id: requestId }),
    retry: (failures, error) => failures < 5 && consoleErrorOf(error).httpStatus === 404,
    retryDelay: 1_000,
  });
  const pretty = (text: string | null) => {
    if (text === null) return null;
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      return text;
    }
  };
  return (
    <>
      <p className="breadcrumb">
        <Link href="/logs">← Logs</Link>
      </p>
      <h1>Request {requestId}</h1>
      {line.isPending ? (
        <p role="status">Loading…</p>
      ) : line.isError ? (
        <p role="alert">{consoleErrorOf(line.error).message}</p>
      ) : (
        <>
          <dl className="facts">
            <dt>Request</dt>
            <dd className="mono">
              {line.data.method} {line.data.path}
              {line.data.query ? `?${line.data.query}` : ''}
            </dd>
            <dt>Status</dt>
            <dd>{line.data.status}</dd>
            <dt>Duration</dt>
            <dd>{line.data.duration_ms} ms</dd>
            <dt>Key</dt>
            <dd>{line.data.key ? `${line.data.key.name ?? line.data.key.id} (…${line.data.key.last_four})` : '—'}</dd>
            <dt>Time</dt>
            <dd>{formatDateTime(line.data.created_at)}</dd>
          </dl>
          {line.data.error_body ? (
            <>
              <h2>Error</h2>
              <pre className="json">{pretty(line.data.error_body)}</pre>
            </>
          ) : null}
          {line.data.request_body ? (
            <>
              <h2>Request body</h2>
              <pre className="json">{pretty(line.data.request_body)}</pre>
            </>
          ) : null}
        </>
      )}
    </>
  );
}
