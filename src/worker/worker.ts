import { setTimeout as sleep } from 'node:timers/promises'
import { isDatabaseUnavailable, type DatabaseAvailability } from '../db/availability.js'
import type { Job, JobContext } from './job.js'

/** The longest pause after failures: a minute for a job that keeps failing, … */
const MAX_BACKOFF_MS = 60_000
/**
 * … but a few seconds while the database is unreachable; and such a pause ends early when the
 * process sees the database back (it probes every second), so work resumes at once.
 */
const MAX_OUTAGE_BACKOFF_MS = 5_000

/** Runs every job in its own loop until stopped. */
export class Worker {
  private readonly controller = new AbortController()
  private loops: Promise<void>[] = []

  constructor(
    private readonly context: Omit<JobContext, 'signal'>,
    private readonly jobs: readonly Job[],
    /** Told when a job finds the database unreachable, which logs the outage once. */
    private readonly availability?: DatabaseAvailability,
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
    let outage = false
    while (!signal.aborted) {
      let handled = 0
      try {
        handled = await job.runOnce({ ...this.context, log, signal })
        failures = 0
      } catch (error) {
        failures++
        outage = isDatabaseUnavailable(error)
        if (outage) {
          // Logged once for the whole outage by `availability`, not once per job and retry.
          this.availability?.failed(error)
          log.debug({ err: error }, 'job paused: the database is unreachable')
        } else {
          log.error({ err: error }, 'job failed; retrying after a pause')
        }
      }
      if (handled > 0 && failures === 0) continue
      // Back off on repeated failures, never spin.
      const delay = failures > 0 ? Math.min(outage ? MAX_OUTAGE_BACKOFF_MS : MAX_BACKOFF_MS, 1000 * 2 ** Math.min(failures, 6)) : job.idleDelayMs
      await this.pause(delay, failures > 0 && outage)
    }
  }

  /** Waits `ms`, or less when stopped, or when `untilAvailable` and the outage ends first. */
  private async pause(ms: number, untilAvailable: boolean): Promise<void> {
    let signal = this.controller.signal
    if (untilAvailable && this.availability) {
      const recovered = new AbortController()
      void this.availability.whenAvailable().then(() => recovered.abort())
      signal = AbortSignal.any([signal, recovered.signal])
    }
    await sleep(ms, undefined, { signal }).catch(() => {})
  }
}
