import type { Job } from '../../worker/job.js'

/** Keys per statement: each batch commits on its own, so no lock is held for long. */
const CLEANUP_BATCH = 1000

/**
 * Forgets Idempotency-Keys past their 24 hours, so the table stays the size of a day. One
 * batch per run; the worker runs again at once while a batch found keys.
 */
export const idempotencyCleanupJob: Job = {
  name: 'idempotency-cleanup',
  idleDelayMs: 15 * 60_000,
  runOnce: ({ services }) => services.properties.forgetExpiredIdempotencyKeys(CLEANUP_BATCH),
}
