import { randomUUID } from 'node:crypto';
import type { Executor } from '../repositories/tenant.js';
import { type JobRow, jobsRepository } from '../repositories/jobs.js';
import { now } from '../ids.js';
import type { SendJob } from '../services/messages.js';

/** The kinds of background work and what each job carries. */
export interface JobPayloads {
  /** One attempt of a webhook delivery. `manual` is a retry asked for through the API. */
  deliver_webhook: { deliveryId: string; manual?: boolean };
  /** The next steps of a workflow run. */
  run_workflow: { runId: string };
  /** Deletes events past their retention; reschedules itself. */
  prune_events: Record<string, never>;
  /** Sends an outbound message through its conversation's channel (worker/send-message.ts). */
  send_message: SendJob;
  /** Processes a webhook body Meta posted to a channel (worker/process-channel-payload.ts). */
  process_channel_payload: { payloadId: string };
}
export type JobKind = keyof JobPayloads;

/** The lane of an endpoint's deliveries: at most MAX_RUNNING_PER_ENDPOINT of them run at once. */
export const endpointLane = (endpointId: string) => `endpoint:${endpointId}`;

/** The lane of a channel's sends, whose pace the channel's send rate sets (worker/send-message.ts). */
export const channelLane = (channelId: string) => `channel:${channelId}`;

/** A job to queue: its kind, account and payload; when it is due (now by default), its id and lane. */
export interface NewJob<K extends JobKind = JobKind> {
  kind: K;
  accountId: string | null;
  payload: JobPayloads[K];
  runAt?: string;
  id?: string;
  lane?: string;
}

/**
 * Puts a job in the queue. Called inside the transaction of the change that needs it, so the job
 * exists exactly when the change does.
 */
export async function enqueue<K extends JobKind>(db: Executor, input: NewJob<K>): Promise<string> {
  const [row] = await enqueueAll(db, [input]);
  return (row as JobRow).id;
}

/** Puts several jobs in the queue, as enqueue does, in one statement. */
export async function enqueueAll(db: Executor, inputs: readonly NewJob[]): Promise<JobRow[]> {
  const at = now();
  const rows = inputs.map((input) => jobRow(input, at));
  await jobsRepository.insert(db, rows);
  return rows;
}

/** The row of a job to queue, created at `at`. */
export function jobRow(input: NewJob, at: string): JobRow {
  return {
    id: input.id ?? `job_${randomUUID()}`,
    kind: input.kind,
    account_id: input.accountId,
    payload: JSON.stringify(input.payload),
    run_at: input.runAt ?? at,
    attempts: 0,
    locked_by: null,
    locked_until: null,
    created_at: at,
    lane: input.lane ?? (input.accountId === null ? 'system' : `account:${input.accountId}`),
  };
}
