import { changeRetentionJob } from '../modules/catalogue/change-retention.job.js'
import { feedJobs } from '../modules/feeds/feed-runs.job.js'
import { eventRetentionJob } from '../modules/events/event-retention.job.js'
import { orphanFilesJob } from '../modules/images/orphan-files.job.js'
import { moderationJob } from '../modules/moderation/moderation.job.js'
import { idempotencyCleanupJob } from '../modules/properties/idempotency-cleanup.job.js'
import type { Config } from '../config.js'
import { webhookJobs } from '../modules/webhooks/webhooks.jobs.js'
import type { Job } from './job.js'

/** The jobs a worker process runs, new for each worker (some keep state). Features add theirs here. */
export function workerJobs(config: Config): Job[] {
  return [
    moderationJob,
    idempotencyCleanupJob,
    eventRetentionJob,
    changeRetentionJob,
    orphanFilesJob,
    ...feedJobs({ pollIntervalMs: config.feeds.pollIntervalMs }),
    ...webhookJobs({ pollIntervalMs: config.webhookPollIntervalMs, concurrency: config.webhookDeliveryConcurrency }),
  ]
}
