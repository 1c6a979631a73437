import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { DatabaseHandle } from '../db/database.js';
import { eventsRepository } from '../repositories/events.js';
import { idempotencyKeysRepository } from '../repositories/idempotency.js';
import { type ClaimedJob, type JobKind, type JobPayloads, enqueue, jobsRepository } from '../repositories/jobs.js';
import { channelInboundService } from '../services/channel-inbound.js';
import type { ServiceContext } from '../services/context.js';
import { EVENT_RETENTION_MS } from '../services/events.js';
import { filesService } from '../services/files.js';
import { mediaService } from '../services/media.js';
import { requestLogsService } from '../services/request-logs.js';
import { messagesService } from '../services/messages.js';
import { deliverWebhooks } from '../services/webhook-deliveries.js';
import { runWorkflow } from '../services/workflow-runs.js';
import type { Settings } from '../settings.js';

/** What a handler may ask for: nothing (done), or another run of the same job later. */
// biome-ignore lint/suspicious/noConfusingVoidType: a handler that is done returns nothing, as an async function without a value does (Promise<void>).
export type JobOutcome = void | { retryAt: string; payload?: unknown };

export interface JobContext<K extends JobKind> {
  id: string;
  kind: K;
  accountId: string | null;
  payload: JobPayloads[K];
  /** 1 on the first claim. */
  attempts: number;
  /** When this claim runs out: past it, another worker may take the job. */
  leaseUntil: string;
}

export type JobHandler<K extends JobKind> = (job: JobContext<K>) => Promise<JobOutcome>;

/**
 * A handler that takes the jobs of its kind in one lane of a claim together (one account's): an outcome for each, in
 * order.
 */
export interface BatchHandler<K extends JobKind> {
  batch: (jobs: JobContext<K>[]) => Promise<JobOutcome[]>;
}

export type JobHandlers = { [K in JobKind]: JobHandler<K> | BatchHandler<K> };

export interface WorkerLogger {
  info(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface WorkerOptions {
  database: DatabaseHandle;
  handlers: JobHandlers;
  /** How often to look for due jobs when idle. */
  pollIntervalMs?: number;
  /**
   * How long a claim holds unless renewed (15 s by default). The worker renews the lease of the
   * jobs it holds every third of it, so a worker that dies loses its jobs to others within this.
   */
  leaseMs?: number;
  /**
   * Jobs run at once by this worker (64 by default): deliveries mostly wait on the network, and
   * with 16 a worker spent most of its time between claims with few jobs running (bench/README.md,
   * "Webhook deliveries").
   */
  concurrency?: number;
  logger?: WorkerLogger;
}

/**
 * The share of a worker's slots one account may hold: the rest stay free for other accounts, so a
 * flood of slow jobs never keeps another account's job from starting at the next claim.
 */
const ACCOUNT_SHARE = 3 / 4;

/**
 * After a claim that found fewer jobs than free slots, the next waits at least this long: claiming
 * on every finished job kept Postgres too busy to hold the latency target (bench/README.md,
 * "Webhook deliveries").
 */
const SHORT_CLAIM_PAUSE_MS = 20;

/** A job whose handler throws is tried again later, at most this many times. */
const MAX_FAILED_ATTEMPTS = 20;
const PRUNE_JOB_ID = 'job_prune_events';

/**
 * Runs the queued jobs of every account: claims due jobs with a lease, runs their handlers, and
 * deletes or reschedules them. Several workers may share one Postgres database; each job is
 * claimed by one of them at a time.
 */
export class Worker {
  readonly id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  /** Jobs running (a batch runs several in one task). */
  private runningJobs = 0;
  /** The ids of the jobs running, whose leases renew() extends (with those of `finished`). */
  private readonly runningIds = new Set<string>();
  /** The timer of the next renewal, from start() until stop() has let the running jobs finish. */
  private renewal: NodeJS.Timeout | undefined;
  private renewingLeases = false;
  /** The renewal under way, which stop() waits for before it gives the jobs back. */
  private renewing: Promise<void> | undefined;
  /**
   * Jobs this worker finished whose rows are still queued under its lease: they leave the queue
   * with the next claim, in its transaction. A crash before that runs them again when the lease
   * runs out, as a crash during a job does; every handler finds its work done and stops.
   */
  private finished: string[] = [];
  /** Jobs running on this worker by account. */
  private readonly runningByAccount = new Map<string, number>();
  /** Ends the loop's sleep; a wake-up while the loop is claiming ends the next sleep at once. */
  private wakeUp: (() => void) | undefined;
  private woken = false;
  private readonly options: Required<Omit<WorkerOptions, 'logger'>> & { logger: WorkerLogger | undefined };

  constructor(options: WorkerOptions) {
    this.options = { pollIntervalMs: 250, leaseMs: 15_000, concurrency: 64, ...options, logger: options.logger };
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.ensurePruneJob();
    this.loop = this.run();
    this.renewingLeases = true;
    this.scheduleRenewal();
  }

  /** Renews the leases every third of a lease while the worker runs: two renewals may fail before one runs out. */
  private scheduleRenewal(): void {
    this.renewal = setTimeout(() => {
      this.renewing = this.renew().finally(() => {
        this.renewing = undefined;
        if (this.renewingLeases) this.scheduleRenewal();
      });
    }, this.options.leaseMs / 3);
  }

  /** Extends the lease of every job this worker holds: running, or finished and not yet deleted. */
  private async renew(): Promise<void> {
    const ids = [...this.runningIds, ...this.finished];
    try {
      await jobsRepository.renew(
        this.options.database.db,
        this.options.database.capabilities,
        this.id,
        ids,
        new Date(Date.now() + this.options.leaseMs).toISOString(),
      );
    } catch (error) {
      // The next renewal tries again; past the lease another worker may run the jobs again (at least once).
      this.options.logger?.error({ err: error, jobs: ids.length }, 'worker: renewing leases failed');
    }
  }

  /** Stops claiming, lets running jobs finish, and gives back any claim not started. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wake();
    await this.loop;
    await Promise.allSettled([...this.inFlight]);
    // Renewed until the jobs finished, however long they took: only then is the claim given back.
    this.renewingLeases = false;
    clearTimeout(this.renewal);
    await this.renewing;
    try {
      await this.flushFinished();
    } finally {
      // Given back even if the finished ones could not be deleted: they run again, at least once.
      await jobsRepository.release(this.options.database.db, this.id);
    }
  }

  /** Claims and runs the jobs due now, once; resolves when they are done. For tests and tools. */
  async runDue(): Promise<number> {
    const jobs = await this.claim(this.options.concurrency - this.runningJobs);
    this.launchAll(jobs);
    await Promise.allSettled([...this.inFlight]);
    await this.flushFinished();
    return jobs.length;
  }

  private flushFinished(): Promise<void> {
    return this.handOverFinished((ids) =>
      jobsRepository.finish(this.options.database.db, this.options.database.capabilities, this.id, ids),
    );
  }

  /** Gives the finished jobs to a statement that deletes them; if it fails they wait for the next one. */
  private async handOverFinished<T>(use: (ids: readonly string[]) => Promise<T>): Promise<T> {
    const ids = this.finished;
    this.finished = [];
    try {
      return await use(ids);
    } catch (error) {
      this.finished.push(...ids);
      throw error;
    }
  }

  private async run(): Promise<void> {
    while (this.running) {
      const free = this.options.concurrency - this.runningJobs;
      let short = false;
      if (free > 0) {
        try {
          const jobs = await this.claim(free);
          this.launchAll(jobs);
          short = jobs.length < free;
        } catch (error) {
          this.options.logger?.error({ err: error }, 'worker: claiming jobs failed');
        }
      }
      // The queue had no more to give: claim again only after a pause, not once per finished job.
      if (short)
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(SHORT_CLAIM_PAUSE_MS, this.options.pollIntervalMs)),
        );
      await this.sleep();
    }
  }

  /** Launches a claim's jobs: those of a batch handler's kind together by lane, the others one by one. */
  private launchAll(jobs: readonly ClaimedJob[]): void {
    const batches = new Map<string, ClaimedJob[]>();
    for (const job of jobs) {
      if (!('batch' in (this.options.handlers[job.kind as JobKind] ?? {}))) {
        this.launch([job]);
        continue;
      }
      const key = `${job.kind}\n${job.lane}`;
      const batch = batches.get(key);
      if (batch) batch.push(job);
      else batches.set(key, [job]);
    }
    for (const batch of batches.values()) this.launch(batch);
  }

  /**
   * Runs claimed jobs in their slots (one task); when it ends, the loop claims again once a quarter
   * of the slots are free (or at the next poll): one claim for several finished jobs, not one per job.
   */
  private launch(jobs: ClaimedJob[]): void {
    this.runningJobs += jobs.length;
    for (const job of jobs) {
      this.countAccount(job.account_id, 1);
      this.runningIds.add(job.id);
    }
    const task = this.process(jobs).finally(() => {
      this.inFlight.delete(task);
      this.runningJobs -= jobs.length;
      for (const job of jobs) this.runningIds.delete(job.id);
      for (const job of jobs) this.countAccount(job.account_id, -1);
      if (this.options.concurrency - this.runningJobs >= Math.max(1, Math.floor(this.options.concurrency / 4)))
        this.wake();
    });
    this.inFlight.add(task);
  }

  private countAccount(account: string | null, change: 1 | -1): void {
    if (account === null) return;
    const running = (this.runningByAccount.get(account) ?? 0) + change;
    if (running === 0) this.runningByAccount.delete(account);
    else this.runningByAccount.set(account, running);
  }

  private wake(): void {
    if (this.wakeUp) this.wakeUp();
    else this.woken = true;
  }

  private sleep(): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, this.options.pollIntervalMs);
      this.wakeUp = done;
    });
  }

  private claim(limit: number): Promise<ClaimedJob[]> {
    const now = Date.now();
    const perAccount = Math.max(1, Math.floor(this.options.concurrency * ACCOUNT_SHARE));
    const accountRoom: Record<string, number> = {};
    for (const [account, running] of this.runningByAccount) accountRoom[account] = Math.max(0, perAccount - running);
    return this.handOverFinished((finished) =>
      jobsRepository.claim(this.options.database.db, this.options.database.capabilities, {
        workerId: this.id,
        limit,
        now: new Date(now).toISOString(),
        leaseUntil: new Date(now + this.options.leaseMs).toISOString(),
        perAccount,
        accountRoom,
        finished,
      }),
    );
  }

  private async process(jobs: ClaimedJob[]): Promise<void> {
    const kind = (jobs[0] as ClaimedJob).kind as JobKind;
    const handler = this.options.handlers[kind] as JobHandler<JobKind> | BatchHandler<JobKind> | undefined;
    const contexts = jobs.map(
      (job): JobContext<JobKind> => ({
        id: job.id,
        kind: job.kind as JobKind,
        accountId: job.account_id,
        payload: JSON.parse(job.payload),
        attempts: job.attempts,
        leaseUntil: job.locked_until,
      }),
    );
    let outcomes: JobOutcome[];
    try {
      if (!handler) throw new Error(`no handler for job kind "${kind}"`);
      outcomes =
        'batch' in handler ? await handler.batch(contexts) : [await handler(contexts[0] as JobContext<JobKind>)];
    } catch (error) {
      for (const job of jobs) await this.failed(job, error);
      return;
    }
    for (const [index, job] of jobs.entries()) {
      const outcome = outcomes[index];
      try {
        if (outcome) {
          const payload = outcome.payload === undefined ? undefined : JSON.stringify(outcome.payload);
          await jobsRepository.reschedule(this.options.database.db, job.id, this.id, outcome.retryAt, payload);
        } else {
          this.finished.push(job.id);
        }
      } catch (error) {
        await this.failed(job, error);
      }
    }
  }

  /** A job whose handler threw runs again after a backoff, up to MAX_FAILED_ATTEMPTS tries. */
  private async failed(job: ClaimedJob, error: unknown): Promise<void> {
    this.options.logger?.error(
      { err: error, jobId: job.id, kind: job.kind, attempts: job.attempts },
      'worker: job failed',
    );
    try {
      if (job.attempts >= MAX_FAILED_ATTEMPTS) {
        this.finished.push(job.id);
      } else {
        const backoffMs = Math.min(3_600_000, 1000 * 2 ** job.attempts);
        await jobsRepository.reschedule(
          this.options.database.db,
          job.id,
          this.id,
          new Date(Date.now() + backoffMs).toISOString(),
        );
      }
    } catch {
      // The lease expires and the job is claimed again.
    }
  }

  /** One prune job exists at all times; its handler reschedules it. */
  private async ensurePruneJob(): Promise<void> {
    const { database } = this.options;
    const exists = await database.db.selectFrom('jobs').select('id').where('id', '=', PRUNE_JOB_ID).executeTakeFirst();
    if (exists) return;
    try {
      await enqueue(database.db, { id: PRUNE_JOB_ID, kind: 'prune_events', accountId: null, payload: {} });
    } catch (error) {
      if (!database.isUniqueViolation(error)) throw error;
    }
  }
}

// What each kind of job does ------------------------------------------------------------------------------------------

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
    download_media: async ({ accountId, payload }) =>
      accountId === null ? undefined : mediaService.download({ ...deps, accountId }, payload),
    run_workflow: async ({ accountId, payload }) =>
      accountId === null ? undefined : runWorkflow({ ...deps, accountId }, payload),
    prune_events: async () => {
      await eventsRepository.prune(deps.database.db, new Date(Date.now() - EVENT_RETENTION_MS).toISOString());
      await idempotencyKeysRepository.prune(deps.database.db);
      await requestLogsService.prune(deps, deps.settings.requestLogDays);
      await filesService.pruneUnclaimed(deps);
      return { retryAt: new Date(Date.now() + PRUNE_INTERVAL_MS).toISOString() };
    },
  };
}
