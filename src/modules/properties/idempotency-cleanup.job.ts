import type { Job } from '../../worker/worker.js'
import { deleteExpiredIdempotencyKeys } from './properties.repository.js'

/** Forgets Idempotency-Keys past their 24 hours, so the table stays the size of a day. */
export const idempotencyCleanupJob: Job = {
  name: 'idempotency-cleanup',
  idleDelayMs: 15 * 60_000,
  runOnce: async ({ db }) => {
    await deleteExpiredIdempotencyKeys(db)
    return 0 // one sweep per interval is enough
  },
}
