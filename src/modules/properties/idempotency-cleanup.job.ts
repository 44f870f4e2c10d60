import type { Job } from '../../worker/job.js'

/** Forgets Idempotency-Keys past their 24 hours, so the table stays the size of a day. */
export const idempotencyCleanupJob: Job = {
  name: 'idempotency-cleanup',
  idleDelayMs: 15 * 60_000,
  runOnce: async ({ services }) => {
    await services.properties.forgetExpiredIdempotencyKeys()
    return 0 // one sweep per interval is enough
  },
}
