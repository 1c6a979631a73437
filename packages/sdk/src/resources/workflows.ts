import type { CreateWorkflowBody, ListRunsQuery, ListWorkflowsQuery, TriggerWorkflowBody, Workflow, WorkflowRun } from '../contract.js';
import type { PagePromise } from '../pagination.js';
import type { RequestOptions } from '../request-sender.js';
import { Resource, withOffset } from './resource.js';

export class Workflows extends Resource {
  list(params: ListWorkflowsQuery = {}, options?: RequestOptions): PagePromise<Workflow> {
    return this.paginate('workflows.list', (offset) => ({ query: withOffset(params, offset) }), options);
  }

  create(body: CreateWorkflowBody, options?: RequestOptions): Promise<Workflow> {
    return this.request('workflows.create', { body }, options);
  }

  retrieve(id: string, options?: RequestOptions): Promise<Workflow> {
    return this.request('workflows.retrieve', { params: { id } }, options);
  }

  /** Starts a run for a contact; resolves with the queued run (the steps run in the background). */
  trigger(id: string, body: TriggerWorkflowBody, options?: RequestOptions): Promise<WorkflowRun> {
    return this.request('workflows.trigger', { params: { id }, body }, options);
  }

  /** The workflow's runs, newest first; filter `status`. */
  runs(id: string, params: ListRunsQuery = {}, options?: RequestOptions): PagePromise<WorkflowRun> {
    return this.paginate('workflows.listRuns', (offset) => ({ params: { id }, query: withOffset(params, offset) }), options);
  }
}
