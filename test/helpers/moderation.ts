import type { Database } from '../../src/db/client.js'
import { ModerationService } from '../../src/modules/moderation/moderation.service.js'

/** Runs the internal check on everything waiting, as the worker would, until the queue is empty. */
export async function runInternalCheck(db: Database, mode: 'auto' | 'manual' = 'auto'): Promise<void> {
  const service = new ModerationService(db, mode)
  while ((await service.checkWaiting()) > 0) {
    // keep going until no listing waits
  }
}
