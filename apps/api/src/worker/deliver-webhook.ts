import type { DatabaseHandle } from '../db/database.js';
import { type DeliveryAttempt, deliverWebhooks } from '../services/webhook-deliveries.js';
import type { Settings } from '../settings.js';
import type { JobContext, JobOutcome } from './worker.js';

const attemptOf = ({ payload, leaseUntil }: JobContext<'deliver_webhook'>): DeliveryAttempt => ({
  deliveryId: payload.deliveryId,
  manual: payload.manual === true,
  leaseUntil,
});

/**
 * The deliveries of one endpoint's lane in a claim, attempted together for their account
 * (services/webhook-deliveries.ts). An outcome for each job, in order.
 */
export async function deliverWebhookJobs(
  deps: { database: DatabaseHandle; settings: Settings },
  jobs: readonly JobContext<'deliver_webhook'>[],
): Promise<JobOutcome[]> {
  const accountId = jobs[0]?.accountId;
  if (accountId === undefined || accountId === null) return jobs.map(() => undefined);
  return deliverWebhooks({ ...deps, accountId }, { attempts: jobs.map(attemptOf) });
}
