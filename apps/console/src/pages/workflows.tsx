import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { ListSection } from '../components/list-section';
import { consoleErrorOf } from '../errors';
import { formatDateTime } from '../format';
import { useTRPC } from '../trpc';

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
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Workflows</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Started by</th>
                    <th scope="col">Steps</th>
                    <th scope="col">Enabled</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {records.map((workflow) => (
                    <tr key={workflow.id}>
                      <td data-label="Name">
                        <Link href={`/workflows/${workflow.id}`}>{workflow.name}</Link>
                      </td>
                      <td data-label="Started by" className="mono">
                        {workflow.trigger?.event ?? 'the API'}
                      </td>
                      <td data-label="Steps">{workflow.steps.length}</td>
                      <td data-label="Enabled">{workflow.enabled ? 'Yes' : 'No'}</td>
                      <td data-label="Created">{formatDateTime(workflow.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
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
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Runs</caption>
                <thead>
                  <tr>
                    <th scope="col">Run</th>
                    <th scope="col">Status</th>
                    <th scope="col">Steps</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {records.map((run) => (
                    <tr key={run.id}>
                      <td data-label="Run" className="mono">
                        {run.id}
                      </td>
                      <td data-label="Status">
                        {run.status}
                        {run.error ? ` (${run.error})` : ''}
                      </td>
                      <td data-label="Steps">
                        <ol className="steps">
                          {run.steps.map((step) => (
                            <li key={step.index}>
                              {step.type}: {step.status}
                              {step.error ? ` (${step.error})` : ''}
                            </li>
                          ))}
                        </ol>
                      </td>
                      <td data-label="Created">{formatDateTime(run.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
      </ListSection>
    </>
  );
}
