import type { Job } from '../../worker/job.js'

/** Runs the internal check on listings waiting for it, within about a second of submission. */
export const moderationJob: Job = {
  name: 'moderation',
  idleDelayMs: 500,
  runOnce: ({ services, log }) => services.moderation.checkWaiting(25, log),
}
