import { setTimeout as sleep } from 'node:timers/promises'
import type { Job, JobContext } from './job.js'

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
