import type { Job } from '../../worker/job.js'
import { RETENTION_BATCH } from '../events/event-retention.job.js'

/**
 * Forgets removals older than CHANGE_RETENTION_DAYS from the change feed, a batch per run (the
 * worker runs again at once while a batch found work). Upserts stay: each is a listing in the
 * catalogue, which a mirror starting from the beginning needs.
 */
export const changeRetentionJob: Job = {
  name: 'change-retention',
  idleDelayMs: 10 * 60_000,
  runOnce: ({ services, config }) => services.changes.forgetRemovals(config.retention.changeDays, RETENTION_BATCH),
}
