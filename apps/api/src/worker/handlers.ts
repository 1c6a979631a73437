import type { DatabaseHandle } from '../db/database.js';
import { eventsRepository } from '../repositories/events.js';
import { idempotencyKeysRepository } from '../repositories/idempotency.js';
import { EVENT_RETENTION_MS } from '../services/events.js';
import type { Settings } from '../settings.js';
import { deliverWebhookJobs } from './deliver-webhook.js';
import { processChannelPayloads } from './process-channel-payload.js';
import { runWorkflow } from './run-workflow.js';
import { sendMessage } from './send-message.js';
import type { JobHandlers } from './worker.js';

const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/** What the worker does for each kind of job. */
export function jobHandlers(deps: { database: DatabaseHandle; settings: Settings }): JobHandlers {
  return {
    deliver_webhook: { batch: (jobs) => deliverWebhookJobs(deps, jobs) },
    run_workflow: (job) => runWorkflow(deps, job),
    send_message: (job) => sendMessage(deps, job),
    process_channel_payload: { batch: (jobs) => processChannelPayloads(deps, jobs) },
    prune_events: async () => {
      await eventsRepository.prune(deps.database.db, new Date(Date.now() - EVENT_RETENTION_MS).toISOString());
      await idempotencyKeysRepository.prune(deps.database.db);
      return { retryAt: new Date(Date.now() + PRUNE_INTERVAL_MS).toISOString() };
    },
  };
}
