import type {
  CreateWorkflowBody,
  ListRunsQuery,
  ListWorkflowsQuery,
  TriggerWorkflowBody,
  UpdateWorkflowBody,
  Workflow,
  WorkflowRun,
} from '../contract.js';
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

  /** Changes its name, steps or `enabled`; runs already started keep the steps they started with. */
  update(id: string, body: UpdateWorkflowBody, options?: RequestOptions): Promise<Workflow> {
    return this.request('workflows.update', { params: { id }, body }, options);
  }

  /** Deletes it and cancels its unfinished runs; its runs stay readable. */
  async del(id: string, options?: RequestOptions): Promise<void> {
    await this.request('workflows.delete', { params: { id } }, options);
  }

  /** Starts a run for a contact; resolves with the queued run (the steps run in the background). */
  trigger(id: string, body: TriggerWorkflowBody, options?: RequestOptions): Promise<WorkflowRun> {
    return this.request('workflows.trigger', { params: { id }, body }, options);
  }

  /** The workflow's runs, newest first; filter `status`. */
  runs(id: string, params: ListRunsQuery = {}, options?: RequestOptions): PagePromise<WorkflowRun> {
    return this.paginate(
      'workflows.listRuns',
      (offset) => ({ params: { id }, query: withOffset(params, offset) }),
      options,
    );
  }

  retrieveRun(id: string, runId: string, options?: RequestOptions): Promise<WorkflowRun> {
    return this.request('workflows.retrieveRun', { params: { id, run_id: runId } }, options);
  }

  /** Cancels a run still queued or waiting. */
  cancelRun(id: string, runId: string, options?: RequestOptions): Promise<WorkflowRun> {
    return this.request('workflows.cancelRun', { params: { id, run_id: runId } }, options);
  }
}
