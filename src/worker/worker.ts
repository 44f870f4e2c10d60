import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { Database } from '../db/client.js'
import { moderationJob } from '../modules/moderation/moderation.job.js'
import { idempotencyCleanupJob } from '../modules/properties/idempotency-cleanup.job.js'
import { WebhookDeliveryJob, webhookFanOutJob } from '../modules/webhooks/webhooks.jobs.js'

/** What a job gets to do its work. */
export interface JobContext {
  db: Database
  config: Config
  log: Logger
  /** Aborted when the worker stops: a job finishes the item in hand and returns. */
  signal: AbortSignal
}

/**
 * One kind of background work (the internal check of listings, webhook delivery, ...).
 * `runOnce` does a bounded batch and says how many items it handled; the worker calls it
 * again at once while there is work and waits `idleDelayMs` when there is none. Jobs claim
 * their rows in the database (FOR UPDATE SKIP LOCKED), so any number of workers may run.
 */
export interface Job {
  name: string
  idleDelayMs: number
  runOnce(context: JobContext): Promise<number>
  /** Lets go of what the job holds (work still in flight, connections) once its loop has ended. */
  stop?(): Promise<void>
}

/** Runs every job in its own loop until stopped. */
export class Worker {
  private readonly controller = new AbortController()
  private loops: Promise<void>[] = []

  constructor(
    private readonly context: Omit<JobContext, 'signal'>,
    private readonly jobs: readonly Job[],
  ) {}

  start(): void {
    this.context.log.info({ jobs: this.jobs.map((job) => job.name) }, 'worker started')
    this.loops = this.jobs.map((job) => this.loop(job))
  }

  /** Stops taking new work and waits for the batches in hand to finish. */
  async stop(): Promise<void> {
    this.controller.abort()
    await Promise.all(this.loops)
    await Promise.all(this.jobs.map((job) => (job.stop ? job.stop() : Promise.resolve())))
    this.context.log.info('worker stopped')
  }

  private async loop(job: Job): Promise<void> {
    const { signal } = this.controller
    const log = this.context.log.child({ job: job.name })
    let failures = 0
    while (!signal.aborted) {
      let handled = 0
      try {
        handled = await job.runOnce({ ...this.context, log, signal })
        failures = 0
      } catch (error) {
        failures++
        log.error({ err: error }, 'job failed; retrying after a pause')
      }
      if (handled > 0 && failures === 0) continue
      // Back off on repeated failures (a database outage) up to a minute, never spin.
      const delay = failures > 0 ? Math.min(60_000, 1000 * 2 ** Math.min(failures, 6)) : job.idleDelayMs
      await sleep(delay, undefined, { signal }).catch(() => {})
    }
  }
}

/** The jobs a worker process runs, new for each worker (some keep state). Features add theirs here. */
export function workerJobs(): Job[] {
  return [moderationJob, idempotencyCleanupJob, webhookFanOutJob, new WebhookDeliveryJob()]
}
