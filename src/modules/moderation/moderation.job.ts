import type { Job } from '../../worker/worker.js'
import { mediaBaseUrl } from '../images/storage.js'
import { ModerationService } from './moderation.service.js'

/** Runs the internal check on listings waiting for it, within about a second of submission. */
export const moderationJob: Job = {
  name: 'moderation',
  idleDelayMs: 500,
  runOnce: ({ db, config }) => new ModerationService(db, config.moderationMode, mediaBaseUrl(config)).checkWaiting(),
}
