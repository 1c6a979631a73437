import type { DatabaseHandle } from '../db/database.js';
import { eventsRepository } from '../repositories/events.js';
import { idempotencyKeysRepository } from '../repositories/idempotency.js';
import { EVENT_RETENTION_MS } from '../services/events.js';
import { messagesService } from '../services/messages.js';
import { deliverWebhooks } from '../services/webhook-deliveries.js';
import type { Settings } from '../settings.js';
import { processChannelPayloads } from './process-channel-payload.js';
import { runWorkflow } from './run-workflow.js';
import type { JobHandlers } from './worker.js';

const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/** What the worker does for each kind of job: a batch handler gets one lane's jobs, of one account. */
export function jobHandlers(deps: { database: DatabaseHandle; settings: Settings }): JobHandlers {
  return {
    deliver_webhook: {
      batch: async (jobs) => {
        const accountId = jobs[0]?.accountId;
        if (accountId === undefined || accountId === null) return jobs.map(() => undefined);
        const attempts = jobs.map(({ payload, leaseUntil }) => ({
          deliveryId: payload.deliveryId,
          manual: payload.manual === true,
          leaseUntil,
        }));
        return deliverWebhooks({ ...deps, accountId }, { attempts });
      },
    },
    run_workflow: (job) => runWorkflow(deps, job),
    send_message: async ({ accountId, payload }) =>
      accountId === null ? undefined : messagesService.deliver({ ...deps, accountId }, payload),
    process_channel_payload: { batch: (jobs) => processChannelPayloads(deps, jobs) },
    prune_events: async () => {
      await eventsRepository.prune(deps.database.db, new Date(Date.now() - EVENT_RETENTION_MS).toISOString());
      await idempotencyKeysRepository.prune(deps.database.db);
      return { retryAt: new Date(Date.now() + PRUNE_INTERVAL_MS).toISOString() };
    },
  };
}
