import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { ListSection } from '../components/list-section';
import { consoleErrorOf } from '../errors';
import { formatDateTime } from '../format';
import { useTRPC } from '../trpc';
import { DataTable } from '../components/data-table';

const PAGE_SIZE = 20;

/** `/workflows`: the account's workflows, with what starts each. */
export function WorkflowsPage() {
  const trpc = useTRPC();
  const [offset, setOffset] = useState(0);
  const workflows = useQuery(trpc.workflows.list.queryOptions({ query: { limit: PAGE_SIZE, offset } }));
  return (
    <>
      <h1>Workflows</h1>
      <ListSection
        query={workflows}
        noun="workflows"
        empty="No workflows yet."
        pager={{ label: 'Workflow pages', offset, size: PAGE_SIZE, onOffset: setOffset }}
      >
        {(records) => (
          <>
            <DataTable
              caption="Workflows"
              rows={records}
              rowKey={(workflow) => workflow.id}
              columns={[
                { label: 'Name', cell: (workflow) => <Link href={`/workflows/${workflow.id}`}>{workflow.name}</Link> },
                { label: 'Started by', className: 'mono', cell: (workflow) => workflow.trigger?.event ?? 'the API' },
                { label: 'Steps', cell: (workflow) => workflow.steps.length },
                { label: 'Enabled', cell: (workflow) => (workflow.enabled ? 'Yes' : 'No') },
                { label: 'Created', cell: (workflow) => formatDateTime(workflow.created_at) },
              ]}
            />
          </>
        )}
      </ListSection>
    </>
  );
}

/** `/workflows/:id`: the definition, and its runs newest first with each step's outcome. */
export function WorkflowPage({ id }: { id: string }) {
  const trpc = useTRPC();
  const [offset, setOffset] = useState(0);
  const workflow = useQuery(trpc.workflows.retrieve.queryOptions({ params: { id } }));
  const runs = useQuery(trpc.workflows.listRuns.queryOptions({ params: { id }, query: { limit: PAGE_SIZE, offset } }));
  return (
    <>
      <p className="breadcrumb">
        <Link href="/workflows">← Workflows</Link>
      </p>
      <h1>{workflow.data?.name ?? 'Workflow'}</h1>
      {workflow.isPending ? (
        <p role="status">Loading…</p>
      ) : workflow.isError ? (
        <p role="alert">Could not load the workflow: {consoleErrorOf(workflow.error).message}</p>
      ) : (
        <details>
          <summary>Definition</summary>
          <pre className="json">
            {JSON.stringify({ trigger: workflow.data.trigger, steps: workflow.data.steps }, null, 2)}
          </pre>
        </details>
      )}
      <h2>Runs</h2>
      <ListSection
        query={runs}
        noun="runs"
        empty="No runs yet."
        pager={{ label: 'Run pages', offset, size: PAGE_SIZE, onOffset: setOffset }}
      >
        {(records) => (
          <>
            <DataTable
              caption="Runs"
              rows={records}
              rowKey={(run) => run.id}
              columns={[
                { label: 'Run', className: 'mono', cell: (run) => run.id },
                {
                  label: 'Status',
                  cell: (run) => (
                    <>
                      {run.status}
                      {run.error ? ` (${run.error})` : ''}
                    </>
                  ),
                },
                {
                  label: 'Steps',
                  cell: (run) => (
                    <ol className="steps">
                      {run.steps.map((step) => (
                        <li key={step.index}>
                          {step.type}: {step.status}
                          {step.error ? ` (${step.error})` : ''}
                        </li>
                      ))}
                    </ol>
                  ),
                },
                { label: 'Created', cell: (run) => formatDateTime(run.created_at) },
              ]}
            />
          </>
        )}
      </ListSection>
    </>
  );
}
