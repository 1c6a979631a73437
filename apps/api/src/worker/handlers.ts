import type { DatabaseHandle } from '../db/database.js';
import { eventsRepository } from '../repositories/events.js';
import { idempotencyKeysRepository } from '../repositories/idempotency.js';
import type { JobKind } from '../repositories/jobs.js';
import { channelInboundService } from '../services/channel-inbound.js';
import type { ServiceContext } from '../services/context.js';
import { EVENT_RETENTION_MS } from '../services/events.js';
import { messagesService } from '../services/messages.js';
import { deliverWebhooks } from '../services/webhook-deliveries.js';
import type { Settings } from '../settings.js';
import { runWorkflow } from './run-workflow.js';
import type { BatchHandler, JobContext, JobHandlers, JobOutcome } from './worker.js';

const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

type Deps = { database: DatabaseHandle; settings: Settings };

/** A claim's jobs of one lane, which are one account's, handed to a service verb with a context for that account. */
const ofAccount = <K extends JobKind>(
  deps: Deps,
  run: (ctx: ServiceContext, jobs: JobContext<K>[]) => Promise<JobOutcome[]>,
): BatchHandler<K> => ({
  batch: async (jobs) => {
    const accountId = jobs[0]?.accountId;
    if (accountId === undefined || accountId === null) return jobs.map(() => undefined);
    return run({ ...deps, accountId }, jobs);
  },
});

/** What the worker does for each kind of job: claims are turned into calls of the services' verbs. */
export function jobHandlers(deps: Deps): JobHandlers {
  return {
    deliver_webhook: ofAccount(deps, (ctx, jobs) => {
      const attempts = jobs.map(({ payload, leaseUntil }) => ({
        deliveryId: payload.deliveryId,
        manual: payload.manual === true,
        leaseUntil,
      }));
      return deliverWebhooks(ctx, { attempts });
    }),
    process_channel_payload: ofAccount(deps, (ctx, jobs) => {
      const payloads = jobs.map(({ payload, attempts }) => ({ payloadId: payload.payloadId, attempts }));
      return channelInboundService.process(ctx, { jobs: payloads });
    }),
    send_message: async ({ accountId, payload }) =>
      accountId === null ? undefined : messagesService.deliver({ ...deps, accountId }, payload),
    run_workflow: (job) => runWorkflow(deps, job),
    prune_events: async () => {
      await eventsRepository.prune(deps.database.db, new Date(Date.now() - EVENT_RETENTION_MS).toISOString());
      await idempotencyKeysRepository.prune(deps.database.db);
      return { retryAt: new Date(Date.now() + PRUNE_INTERVAL_MS).toISOString() };
    },
  };
}
