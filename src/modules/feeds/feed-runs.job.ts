import { randomUUID } from 'node:crypto'
import { isDatabaseUnavailable } from '../../db/availability.js'
import type { Job, JobContext } from '../../worker/job.js'
import { RETENTION_BATCH } from '../events/event-retention.job.js'
import { FEED_RUNS_CHANNEL } from './feeds.service.js'

export interface FeedJobsOptions {
  /** FEED_POLL_INTERVAL_MS: how often an idle worker looks for due feeds and for runs to take. */
  pollIntervalMs: number
}

/**
 * The feeds' two jobs: one starts the runs of due feeds (a `running` row, nothing more), the
 * other carries runs out. Any number of workers may run both: scheduling skips feeds another
 * worker is scheduling, and a run is held by one worker's lease at a time (feeds.repository.ts).
 */
export function feedJobs(options: FeedJobsOptions): Job[] {
  return [feedScheduleJob(options), new FeedRunJob(options), feedRunRetentionJob]
}

/** Forgets runs older than FEED_RUN_RETENTION_DAYS, with their problems, a batch per run; each feed's newest stays. */
export const feedRunRetentionJob: Job = {
  name: 'feed-run-retention',
  idleDelayMs: 10 * 60_000,
  runOnce: ({ services, config }) => services.feeds.forgetOldRuns(config.retention.feedRunDays, RETENTION_BATCH),
}

function feedScheduleJob(options: FeedJobsOptions): Job {
  return {
    name: 'feed-schedule',
    idleDelayMs: options.pollIntervalMs,
    runOnce: ({ services }) => services.feeds.scheduleDueRuns(),
  }
}

/**
 * Carries out one run at a time per worker: a run is long (a download, then thousands of
 * offers) and applies its offers a few at once already. A run started by `POST /feeds/{id}/runs`
 * or the schedule is announced on FEED_RUNS_CHANNEL (PostgreSQL), which wakes an idle worker at
 * once; on PGlite, and for runs whose worker died, the poll finds them.
 */
export class FeedRunJob implements Job {
  readonly name = 'feed-run'
  readonly wakeOn = [FEED_RUNS_CHANNEL]
  readonly idleDelayMs: number
  /** This worker's name on the leases it holds. */
  private readonly owner = randomUUID()
  private running: Promise<void> | undefined

  constructor(options: FeedJobsOptions) {
    this.idleDelayMs = options.pollIntervalMs
  }

  async runOnce({ services, log, signal }: JobContext): Promise<number> {
    const run = await services.feeds.claimRun(this.owner)
    if (!run) return 0
    const runLog = log.child({ feed: run.feedId, run: run.id })
    this.running = (async () => {
      try {
        await services.feeds.execute(run, this.owner, signal)
      } catch (error) {
        if (isDatabaseUnavailable(error)) throw error
        runLog.error({ err: error }, 'feed run failed on an unexpected error')
        await services.feeds.failRun(run, this.owner, error)
      }
    })()
    try {
      await this.running
    } finally {
      this.running = undefined
    }
    return 1
  }

  async stop(): Promise<void> {
    await this.running?.catch(() => undefined)
  }
}
