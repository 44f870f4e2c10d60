import { setTimeout as sleep } from 'node:timers/promises'
import { isDatabaseUnavailable, type DatabaseAvailability } from '../db/availability.js'
import type { DatabaseHandle } from '../db/client.js'
import type { NotificationListener } from '../db/notifications.js'
import type { Job, JobContext } from './job.js'

/** The longest pause after failures: a minute for a job that keeps failing, … */
const MAX_BACKOFF_MS = 60_000
/**
 * … but a few seconds while the database is unreachable; and such a pause ends early when the
 * process sees the database back (it probes every second), so work resumes at once.
 */
const MAX_OUTAGE_BACKOFF_MS = 5_000

/** What a worker uses of the database handle beside its jobs' services. */
export type WorkerDatabase = Pick<DatabaseHandle, 'availability' | 'listen'>

/** A job's wake-up: set by a notice, taken by the job's next idle pause. */
interface Alarm {
  rung: boolean
  /** Ends the idle pause under way, if any. */
  ring?: () => void
}

/** Runs every job in its own loop until stopped. */
export class Worker {
  private readonly controller = new AbortController()
  private loops: Promise<void>[] = []
  private readonly availability: DatabaseAvailability | undefined
  private readonly alarms = new Map<Job, Alarm>()
  private listeners: Promise<NotificationListener | undefined>[] = []

  constructor(
    private readonly context: Omit<JobContext, 'signal'>,
    private readonly jobs: readonly Job[],
    /**
     * Told when a job finds the database unreachable, which logs the outage once; and where the
     * notices that wake jobs are heard. Without it jobs only poll.
     */
    private readonly database?: WorkerDatabase,
  ) {
    this.availability = database?.availability
    for (const job of jobs) this.alarms.set(job, { rung: false })
  }

  start(): void {
    this.context.log.info({ jobs: this.jobs.map((job) => job.name) }, 'worker started')
    this.listeners = this.database ? [...new Set(this.jobs.flatMap((job) => job.wakeOn ?? []))].map((channel) => this.listen(channel)) : []
    this.loops = this.jobs.map((job) => this.loop(job))
  }

  /** Stops taking new work and waits for the batches in hand to finish. */
  async stop(): Promise<void> {
    this.controller.abort()
    await Promise.all(this.listeners.map(async (listener) => (await listener)?.close()))
    await Promise.all(this.loops)
    await Promise.all(this.jobs.map((job) => (job.stop ? job.stop() : Promise.resolve())))
    this.context.log.info('worker stopped')
  }

  private async loop(job: Job): Promise<void> {
    const { signal } = this.controller
    const log = this.context.log.child({ job: job.name })
    let failures = 0
    let outage = false
    const alarm = this.alarms.get(job)!
    while (!signal.aborted) {
      let handled = 0
      // A notice from now on may announce work this run does not see: it skips the next pause.
      alarm.rung = false
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
      if (failures > 0) {
        // Back off on repeated failures, never spin; notices do not cut this pause short.
        await this.pause(Math.min(outage ? MAX_OUTAGE_BACKOFF_MS : MAX_BACKOFF_MS, 1000 * 2 ** Math.min(failures, 6)), outage)
      } else if (!alarm.rung) {
        await this.pause(job.idleDelayMs, false, alarm)
      }
    }
  }

  /**
   * Waits `ms`, or less when stopped, when `untilAvailable` and the outage ends first, or when
   * `alarm` rings.
   */
  private async pause(ms: number, untilAvailable: boolean, alarm?: Alarm): Promise<void> {
    const signals = [this.controller.signal]
    if (untilAvailable && this.availability) {
      const recovered = new AbortController()
      void this.availability.whenAvailable().then(() => recovered.abort())
      signals.push(recovered.signal)
    }
    if (alarm) {
      const rung = new AbortController()
      alarm.ring = () => rung.abort()
      signals.push(rung.signal)
    }
    await sleep(ms, undefined, { signal: AbortSignal.any(signals) }).catch(() => {})
    if (alarm) alarm.ring = undefined
  }

  /** Wakes the jobs that wait on `channel` whenever a notice comes, and when listening (again), as notices sent meanwhile are lost. */
  private async listen(channel: string): Promise<NotificationListener | undefined> {
    const alarms = this.jobs.filter((job) => job.wakeOn?.includes(channel)).map((job) => this.alarms.get(job)!)
    const wake = () => {
      for (const alarm of alarms) {
        alarm.rung = true
        alarm.ring?.()
      }
    }
    let down = false
    try {
      return await this.database!.listen(channel, {
        notice: wake,
        listening() {
          down = false
          wake()
        },
        lost: (error) => {
          // Once per outage: the listener retries by itself, and polling finds the work meanwhile.
          if (!down) this.context.log.warn({ err: error, channel }, 'not listening for notices; jobs poll until it reconnects')
          down = true
        },
      })
    } catch (error) {
      this.context.log.warn({ err: error, channel }, 'cannot listen for notices; jobs poll')
      return undefined
    }
  }
}
