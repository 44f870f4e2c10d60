import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { DatabaseHandle } from '../db/client.js'
import { KEY_REVOCATIONS_CHANNEL } from '../modules/tenants/tenants.service.js'

export interface KeyRevocationsPluginOptions {
  database: DatabaseHandle
}

/**
 * Makes a key revoked, or an agency suspended, by any process stop working on this one at once:
 * the tenants service caches keys it has found active, and hears here which to forget
 * (docs/architecture.md#api-keys-and-suspension). While the listening connection is down the
 * cache's short lifetime bounds the delay instead, and on every reconnection the whole cache is
 * dropped, as the notices sent meanwhile are lost. Only API processes listen: nothing else
 * authenticates keys.
 */
export default fp(
  async function keyRevocationsPlugin(app: FastifyInstance, { database }: KeyRevocationsPluginOptions) {
    const tenants = app.services.tenants
    let down = false
    const listener = await database.listen(KEY_REVOCATIONS_CHANNEL, {
      notice: (payload) => tenants.applyRevocationNotice(payload),
      listening() {
        tenants.forgetAllKeys()
        if (down) app.log.info('listening for key revocations again')
        down = false
      },
      lost(error) {
        // Once per outage: the listener retries every few seconds meanwhile.
        if (!down) app.log.warn({ err: error }, 'not listening for key revocations; cached keys are trusted for at most 10 s until it reconnects')
        down = true
      },
    })
    app.addHook('onClose', () => listener.close())
  },
  { name: 'key-revocations', dependencies: ['services'] },
)
