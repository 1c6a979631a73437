import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { WebhookDelivery } from '@convo/core';
import { ApiError } from '../errors.js';
import { now } from '../ids.js';
import type { StoredEvent } from '../repositories/events.js';
import { endpointLane, enqueue } from '../repositories/jobs.js';
import type { TenantScope } from '../repositories/tenant.js';
import {
  type DeliveryChange,
  type WebhookDeliveryRow,
  webhookDeliveriesRepository,
  webhookEndpointsRepository,
} from '../repositories/webhooks.js';
import { nextTryAt } from './retry-schedule.js';
import { type ServiceContext, transaction, scopeOf } from './context.js';
import { toEvent } from './events.js';
import { publicOnlyLookup, requestRefusal } from '../webhook-addresses.js';
import { type StoredDeliveryAttempt, parseAttempts, toWebhookDelivery, webhookEndpointsService } from './webhooks.js';

export const WEBHOOK_USER_AGENT = 'Convo-Webhooks/1';

/** One attempt to make: its delivery, whether the API asked for it, and until when it is held. */
export interface DeliveryAttempt {
  deliveryId: string;
  /** A retry asked for through the API: made to a disabled endpoint too, and not counted. */
  manual?: boolean;
  /** When the hold on the attempt runs out (the worker's lease on the job). */
  leaseUntil: string;
}

/** What follows an attempt: nothing, or another (automatic) attempt at `retryAt`. */
export type DeliveryOutcome = { retryAt: string; payload: { deliveryId: string } } | undefined;

type DeliveryDeps = Pick<ServiceContext, 'settings'>;

/**
 * The Standard Webhooks signature header: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` for
 * each secret, space-separated. The HMAC key is the base64-decoded part after `whsec_`.
 */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
    })
    .join(' ');
}

/** The headers of a POST Convo signs like a webhook: one signature per secret, none without a secret. */
export function standardWebhookHeaders(input: {
  id: string;
  body: string;
  secrets: readonly string[];
  userAgent: string;
}): Record<string, string> {
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': input.userAgent,
    'webhook-id': input.id,
    'webhook-timestamp': String(timestamp),
    ...(input.secrets.length > 0
      ? { 'webhook-signature': signatureHeader(input.secrets, input.id, timestamp, input.body) }
      : {}),
  };
}

/** How long the request's own attempt holds the delivery (the webhook timeout is shorter). */
const TEST_LEASE_MS = 60_000;

/**
 * `POST /webhook_endpoints/:id/test`: records a `ping` and its delivery, makes the first attempt
 * in the request itself (as the worker would, to a disabled endpoint too), and answers the
 * delivery as it stands. A failed ping is retried on the usual schedule, by the worker.
 */
export async function testWebhookEndpoint(ctx: ServiceContext, endpointId: string): Promise<WebhookDelivery> {
  const delivery = await webhookEndpointsService.createPing(ctx, endpointId);
  const leaseUntil = new Date(Date.now() + TEST_LEASE_MS).toISOString();
  const [outcome] = await deliverWebhooks(ctx, { attempts: [{ deliveryId: delivery.id, manual: true, leaseUntil }] });
  if (outcome?.retryAt) {
    await enqueue(ctx.database.db, {
      kind: 'deliver_webhook',
      accountId: ctx.accountId,
      payload: { deliveryId: delivery.id },
      runAt: outcome.retryAt,
      lane: endpointLane(endpointId),
    });
  }
  const current = await webhookDeliveriesRepository.findById(scopeOf(ctx), endpointId, delivery.id);
  if (!current) throw ApiError.notFound('webhook endpoint', endpointId);
  return toWebhookDelivery(current);
}

/**
 * Attempts of deliveries of the context's account (one endpoint's lane in a claim), an outcome for
 * each, in order. At least once: each attempt is taken before sending (its `next_attempt_at` moved
 * to the end of its job's claim) and recorded after, and the job stays queued until the worker
 * hears back. A crash in between leaves the job to be claimed again when its claim runs out, and
 * the attempt is free again at that moment, so the event is sent again rather than lost. Two jobs
 * for one delivery (a manual retry while one is queued) cannot both take the same attempt. The
 * attempts are taken by one statement, sent at once and recorded by one statement, which the
 * throughput target of bench/README.md (Webhook deliveries) needs.
 */
export async function deliverWebhooks(
  ctx: ServiceContext,
  input: { attempts: readonly DeliveryAttempt[] },
): Promise<DeliveryOutcome[]> {
  const jobs = input.attempts;
  const scope = scopeOf(ctx);
  // The earliest lease of the jobs (ISO times sort as text).
  const until = jobs.map((job) => job.leaseUntil).sort()[0] as string;
  const taken = new Map(
    (
      await webhookDeliveriesRepository.takeForAttempt(
        scope,
        jobs.map((job) => job.deliveryId),
        { now: now(), until },
      )
    ).map((attempt) => [attempt.delivery.id, attempt]),
  );

  // Each job's attempt made, its delivery to fail unsent, or its outcome when it has neither.
  const made = await Promise.all(
    jobs.map(
      async (
        job,
      ): Promise<
        | { outcome: DeliveryOutcome }
        | { unsent: WebhookDeliveryRow }
        | { delivery: WebhookDeliveryRow; attempt: StoredDeliveryAttempt }
      > => {
        const { deliveryId } = job;
        const manual = job.manual === true;
        const taking = taken.get(deliveryId);
        // A second job for the same delivery finds it taken by the first.
        taken.delete(deliveryId);
        if (!taking) return { outcome: await notTaken(scope, deliveryId) };
        const { delivery, endpoint, event, secrets } = taking;
        if (!endpoint) return { outcome: undefined };
        if (endpoint.status === 'disabled' && !manual) return { unsent: delivery };
        const at = now();
        const response = await send(ctx, event, secrets, endpoint.url);
        const attempt: StoredDeliveryAttempt = {
          at,
          status_code: response.statusCode,
          duration_ms: response.durationMs,
          error: response.error,
        };
        return { delivery, attempt: manual ? { ...attempt, manual } : attempt };
      },
    ),
  );
  const attempts = made.flatMap((entry) => ('attempt' in entry ? [entry] : []));
  const unsent = made.flatMap((entry) => ('unsent' in entry ? [entry.unsent] : []));
  const recorded = await record(ctx, scope, attempts, unsent);
  return made.map((entry) =>
    'outcome' in entry ? entry.outcome : 'attempt' in entry ? recorded.get(entry.delivery.id) : undefined,
  );
}

/** A job whose delivery's attempt was not there to take. */
async function notTaken(scope: TenantScope, deliveryId: string): Promise<DeliveryOutcome> {
  const current = await webhookDeliveriesRepository.findByIdAnyEndpoint(scope, deliveryId);
  if (current?.status !== 'pending') return;
  // Not due yet: the attempt was rescheduled, or another job has it in flight. Whatever runs later
  // is an automatic attempt.
  return { retryAt: current.next_attempt_at ?? now(), payload: { deliveryId } };
}

/** Signs and sends the event; an attempt that cannot be made is a failed one. */
async function send(
  deps: DeliveryDeps,
  eventRow: StoredEvent | null,
  secrets: readonly string[],
  url: string,
): Promise<WebhookResponse> {
  if (!eventRow) return { statusCode: null, error: 'event_expired', durationMs: 0 };
  if (secrets.length === 0) return { statusCode: null, error: 'no_signing_key', durationMs: 0 };

  // The same bytes on every attempt: the event as GET /v1/events returns it.
  const body = JSON.stringify(toEvent(eventRow));
  return postWebhook({
    url,
    body,
    headers: standardWebhookHeaders({ id: eventRow.id, body, secrets, userAgent: WEBHOOK_USER_AGENT }),
    timeoutMs: deps.settings.webhookTimeoutMs,
    allowPrivate: deps.settings.allowPrivateWebhooks,
  });
}

/** What the delivery becomes after this attempt; `retryAt` when another automatic one follows. */
function outcomeOf(
  deps: DeliveryDeps,
  previous: StoredDeliveryAttempt[],
  attempt: StoredDeliveryAttempt,
): { status: WebhookDeliveryRow['status']; nextAttemptAt: string | null; disableEndpoint: boolean } {
  const succeeded =
    attempt.error === null && attempt.status_code !== null && attempt.status_code >= 200 && attempt.status_code < 300;
  if (succeeded) return { status: 'succeeded', nextAttemptAt: null, disableEndpoint: false };
  // 410 Gone: the receiver asks for no more deliveries.
  if (attempt.status_code === 410 || attempt.error === 'event_expired') {
    return { status: 'failed', nextAttemptAt: null, disableEndpoint: attempt.status_code === 410 };
  }
  const failedAutomatic = previous.filter((a) => a.error !== null && a.manual !== true).length;
  const nextAttemptAt = nextTryAt(deps.settings.webhookRetryScheduleMs, failedAutomatic);
  if (nextAttemptAt === undefined) return { status: 'failed', nextAttemptAt: null, disableEndpoint: false };
  return { status: 'pending', nextAttemptAt, disableEndpoint: false };
}

/**
 * Appends each attempt and decides what comes next, and fails the deliveries of a disabled endpoint
 * unsent. A delivery as read before its attempt still holds when its `next_attempt_at` is the one
 * the attempt set, so one conditional update records them all; a delivery changed meanwhile (a
 * manual retry or a duplicate job), or whose endpoint the attempt disables, is read again, locked,
 * while an unsent one changed meanwhile is left as it is. The outcome of each attempt's job by
 * delivery id.
 */
async function record(
  ctx: ServiceContext,
  scope: TenantScope,
  attempts: readonly { delivery: WebhookDeliveryRow; attempt: StoredDeliveryAttempt }[],
  unsent: readonly WebhookDeliveryRow[],
): Promise<Map<string, DeliveryOutcome>> {
  const outcomes = new Map<string, DeliveryOutcome>();
  const changes: DeliveryChange[] = unsent.map((delivery) => ({
    id: delivery.id,
    expected_next_attempt_at: delivery.next_attempt_at as string,
    status: 'failed',
    next_attempt_at: null,
    updated_at: now(),
  }));
  for (const { delivery, attempt } of attempts) {
    const previous = parseAttempts(delivery);
    const next = outcomeOf(ctx, previous, attempt);
    if (next.disableEndpoint) continue;
    changes.push({
      id: delivery.id,
      expected_next_attempt_at: delivery.next_attempt_at as string,
      attempts: JSON.stringify([...previous, attempt]),
      status: next.status,
      next_attempt_at: next.nextAttemptAt,
      updated_at: now(),
    });
    // The next attempt is an automatic one, even after a manual retry.
    outcomes.set(
      delivery.id,
      next.nextAttemptAt === null ? undefined : { retryAt: next.nextAttemptAt, payload: { deliveryId: delivery.id } },
    );
  }
  const unchanged = await webhookDeliveriesRepository.updateIfUnchanged(scope, changes);
  for (const { delivery, attempt } of attempts) {
    if (!unchanged.has(delivery.id)) outcomes.set(delivery.id, await recordLocked(ctx, delivery.id, attempt));
  }
  return outcomes;
}

/** Appends the attempt and decides what comes next, in one transaction with the delivery locked. */
async function recordLocked(
  ctx: ServiceContext,
  deliveryId: string,
  attempt: StoredDeliveryAttempt,
): Promise<DeliveryOutcome> {
  return transaction(ctx, async (tx) => {
    const txScope = scopeOf(tx);
    const current = await webhookDeliveriesRepository.findByIdForUpdate(txScope, deliveryId);
    if (!current) return;
    const previous = parseAttempts(current);
    const attempts = JSON.stringify([...previous, attempt]);
    const at = now();
    // Finished meanwhile (by a duplicate job): keep its outcome, only add what happened here.
    if (current.status !== 'pending') {
      await webhookDeliveriesRepository.update(txScope, deliveryId, { attempts, updated_at: at });
      return;
    }
    const next = outcomeOf(ctx, previous, attempt);
    if (next.disableEndpoint) {
      await webhookEndpointsRepository.update(txScope, current.endpoint_id, { status: 'disabled', updated_at: at });
    }
    await webhookDeliveriesRepository.update(txScope, deliveryId, {
      attempts,
      status: next.status,
      next_attempt_at: next.nextAttemptAt,
      updated_at: at,
    });
    return next.nextAttemptAt === null ? undefined : { retryAt: next.nextAttemptAt, payload: { deliveryId } };
  });
}

// Posting a webhook ---------------------------------------------------------------------------------------------------

/** The most of a receiver's answer that is read; the rest is dropped with the connection. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  /** The whole attempt (look-up, connection, answer) must finish within this. */
  timeoutMs: number;
  /** Plain http and non-public addresses are allowed (development, tests). */
  allowPrivate: boolean;
}

export interface WebhookResponse {
  /** Null when no answer arrived. */
  statusCode: number | null;
  /** Null for a complete 2xx answer. */
  error: string | null;
  durationMs: number;
}

const MAX_ERROR_LENGTH = 500;

/** An idle connection to a receiver is closed after this; a busy receiver's connections are reused. */
const IDLE_CONNECTION_MS = 4_000;

/**
 * Connections are kept open between attempts (opening one per delivery cost a third of the worker's
 * time: bench/README.md, "Webhook deliveries"). The address check runs when a connection is opened,
 * and a kept connection stays with the address that passed it. Private addresses, when allowed, get
 * agents of their own, so a connection opened under that setting never serves a checked request.
 */
const agents = {
  checked: {
    http: new http.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
    https: new https.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
  },
  private: {
    http: new http.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
    https: new https.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
  },
};

/**
 * POSTs one webhook with node:http(s), not fetch, because the request must be held to the rules
 * fetch cannot express: the DNS answer is checked before connecting (no private addresses), no
 * redirect is followed, the whole attempt has one deadline and only so much of the answer is read.
 */
export function postWebhook(request: WebhookRequest): Promise<WebhookResponse> {
  const started = performance.now();
  const elapsed = () => Math.max(0, Math.round(performance.now() - started));

  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return Promise.resolve({ statusCode: null, error: 'invalid URL', durationMs: elapsed() });
  }
  const refusal = requestRefusal(url, request.allowPrivate);
  if (refusal) return Promise.resolve({ statusCode: null, error: refusal, durationMs: elapsed() });

  return new Promise((resolve) => {
    let statusCode: number | null = null;
    let settled = false;
    /** `complete`: the whole answer was read, so the connection may serve the next attempt. */
    const finish = (error: string | null, complete = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve({ statusCode, error: error === null ? null : error.slice(0, MAX_ERROR_LENGTH), durationMs: elapsed() });
      if (!complete) req.destroy();
    };

    const secure = url.protocol === 'https:';
    const pool = request.allowPrivate ? agents.private : agents.checked;
    const req = (secure ? https : http).request(url, {
      method: 'POST',
      headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
      agent: secure ? pool.https : pool.http,
      ...(request.allowPrivate ? {} : { lookup: publicOnlyLookup }),
    });
    const deadline = setTimeout(() => finish(`timeout after ${request.timeoutMs} ms`), request.timeoutMs);

    req.on('error', (error: NodeJS.ErrnoException) => finish(error.message || error.code || 'request failed'));
    req.on('response', (res) => {
      statusCode = res.statusCode ?? null;
      let received = 0;
      const outcome = () => errorForStatus(statusCode, res.statusMessage);
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received >= MAX_RESPONSE_BYTES) finish(outcome());
      });
      res.on('end', () => finish(outcome(), true));
      res.on('error', (error) => finish(error.message));
      res.on('aborted', () => finish('the answer was cut off'));
    });
    req.end(request.body);
  });
}

function errorForStatus(statusCode: number | null, statusMessage: string | undefined): string | null {
  if (statusCode === null) return 'no status in the answer';
  if (statusCode >= 200 && statusCode < 300) return null;
  if (statusCode >= 300 && statusCode < 400) return `redirect not followed (${statusCode})`;
  return `HTTP ${statusCode}${statusMessage ? ` ${statusMessage}` : ''}`;
}
