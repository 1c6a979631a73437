import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { DatabaseHandle } from '../db/database.js';
import { type ClaimedJob, jobsRepository } from '../repositories/jobs.js';
import { type JobKind, type JobPayloads, enqueue } from './queue.js';

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

export type JobHandlers = { [K in JobKind]: (job: JobContext<K>) => Promise<JobOutcome> };

export interface WorkerLogger {
  info(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface WorkerOptions {
  database: DatabaseHandle;
  handlers: JobHandlers;
  /** How often to look for due jobs when idle. */
  pollIntervalMs?: number;
  /** How long a claim holds; a worker that dies loses its jobs to others after this. */
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
    this.options = { pollIntervalMs: 250, leaseMs: 60_000, concurrency: 64, ...options, logger: options.logger };
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.ensurePruneJob();
    this.loop = this.run();
  }

  /** Stops claiming, lets running jobs finish, and gives back any claim not started. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wake();
    await this.loop;
    await Promise.allSettled([...this.inFlight]);
    try {
      await this.flushFinished();
    } finally {
      // Given back even if the finished ones could not be deleted: they run again, at least once.
      await jobsRepository.release(this.options.database.db, this.id);
    }
  }

  /** Claims and runs the jobs due now, once; resolves when they are done. For tests and tools. */
  async runDue(): Promise<number> {
    const jobs = await this.claim(this.options.concurrency - this.inFlight.size);
    for (const job of jobs) this.launch(job);
    await Promise.allSettled([...this.inFlight]);
    await this.flushFinished();
    return jobs.length;
  }

  private flushFinished(): Promise<void> {
    return this.handOverFinished((ids) => jobsRepository.finish(this.options.database.db, this.id, ids));
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
      const free = this.options.concurrency - this.inFlight.size;
      let short = false;
      if (free > 0) {
        try {
          const jobs = await this.claim(free);
          for (const job of jobs) this.launch(job);
          short = jobs.length < free;
        } catch (error) {
          this.options.logger?.error({ err: error }, 'worker: claiming jobs failed');
        }
      }
      // The queue had no more to give: claim again only after a pause, not once per finished job.
      if (short) await new Promise((resolve) => setTimeout(resolve, Math.min(SHORT_CLAIM_PAUSE_MS, this.options.pollIntervalMs)));
      await this.sleep();
    }
  }

  /**
   * Runs a claimed job in a slot; when it ends, the loop claims again once a quarter of the slots
   * are free (or at the next poll): one claim for several finished jobs, not one per job.
   */
  private launch(job: ClaimedJob): void {
    const account = job.account_id;
    if (account !== null) this.runningByAccount.set(account, (this.runningByAccount.get(account) ?? 0) + 1);
    const task = this.process(job).finally(() => {
      this.inFlight.delete(task);
      if (account !== null) {
        const left = (this.runningByAccount.get(account) ?? 1) - 1;
        if (left === 0) this.runningByAccount.delete(account);
        else this.runningByAccount.set(account, left);
      }
      if (this.options.concurrency - this.inFlight.size >= Math.max(1, Math.floor(this.options.concurrency / 4))) this.wake();
    });
    this.inFlight.add(task);
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
      jobsRepository.claim(this.options.database.db, {
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

  private async process(job: ClaimedJob): Promise<void> {
    const db = this.options.database.db;
    const handler = this.options.handlers[job.kind as JobKind] as ((job: JobContext<JobKind>) => Promise<JobOutcome>) | undefined;
    try {
      if (!handler) throw new Error(`no handler for job kind "${job.kind}"`);
      const outcome = await handler({
        id: job.id,
        kind: job.kind as JobKind,
        accountId: job.account_id,
        payload: JSON.parse(job.payload),
        attempts: job.attempts,
        leaseUntil: job.locked_until,
      });
      if (outcome) {
        await jobsRepository.reschedule(db, job.id, this.id, outcome.retryAt, outcome.payload === undefined ? undefined : JSON.stringify(outcome.payload));
      } else {
        this.finished.push(job.id);
      }
    } catch (error) {
      this.options.logger?.error({ err: error, jobId: job.id, kind: job.kind, attempts: job.attempts }, 'worker: job failed');
      try {
        if (job.attempts >= MAX_FAILED_ATTEMPTS) {
          this.finished.push(job.id);
        } else {
          const backoffMs = Math.min(3_600_000, 1000 * 2 ** job.attempts);
          await jobsRepository.reschedule(db, job.id, this.id, new Date(Date.now() + backoffMs).toISOString());
        }
      } catch {
        // The lease expires and the job is claimed again.
      }
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
