import type { Database } from '../../src/db/client.js'
import { ModerationService } from '../../src/modules/moderation/moderation.service.js'

/** The photo URL base of apps built by buildTestApp (PUBLIC_BASE_URL http://mls.test). */
export const TEST_MEDIA_BASE = 'http://mls.test/media'

/** Runs the internal check on everything waiting, as the worker would, until the queue is empty. */
export async function runInternalCheck(db: Database, mode: 'auto' | 'manual' = 'auto'): Promise<void> {
  const service = new ModerationService(db, mode, TEST_MEDIA_BASE)
  while ((await service.checkWaiting()) > 0) {
    // keep going until no listing waits
  }
}
