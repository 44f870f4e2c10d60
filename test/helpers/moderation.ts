import type { FastifyInstance } from 'fastify'

/** The photo URL base of apps built by buildTestApp (PUBLIC_BASE_URL http://mls.test). */
export const TEST_MEDIA_BASE = 'http://mls.test/media'

/**
 * Runs the internal check on everything waiting, as the worker would, until the queue is
 * empty; in the app's MODERATION_MODE.
 */
export async function runInternalCheck(app: FastifyInstance): Promise<void> {
  while ((await app.services.moderation.checkWaiting()) > 0) {
    // keep going until no listing waits
  }
}
