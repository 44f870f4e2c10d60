import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError, INVALID_API_KEY } from '../lib/errors.js'
import { secretsEqual } from '../lib/secrets.js'
import type { Reservation } from './failure-throttle.js'
import type { AuthenticatedTenant } from '../modules/tenants/authenticated-tenant.js'
import type { AuthenticatedKey } from '../modules/tenants/tenants.service.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `authenticate`; read only in routes registered behind it. */
    tenant: AuthenticatedTenant
    /** The id of the API key that authenticated the request, set with `tenant`. */
    apiKeyId: number
  }
  interface FastifyInstance {
    /** onRequest hook: `X-API-Key` → `request.tenant`, or 401. */
    authenticate: onRequestHookHandler
    /** onRequest hook: `X-Admin-Key` must equal ADMIN_API_KEY, or 401. */
    authenticateAdmin: onRequestHookHandler
  }
}

export const API_KEY_HEADER = 'x-api-key'
export const ADMIN_KEY_HEADER = 'x-admin-key'

/** The OpenAPI security requirement of routes behind `authenticate`. */
export const apiKeySecurity = [{ ApiKey: [] }]
export const adminKeySecurity = [{ AdminKey: [] }]

export default fp(
  async function authPlugin(app: FastifyInstance) {
    app.decorateRequest('tenant', null as unknown as AuthenticatedTenant)
    app.decorateRequest('apiKeyId', 0)

    // Every wrong key costs its address a failure, taken at once (reserve), so that at most
    // RATE_LIMIT_FAILURES_PER_MINUTE are answered 401 however many come together. A key this
    // process does not know takes its failure before it is looked up, and gives it back if right.
    const throttle = app.failureThrottle

    app.decorate('authenticate', async function authenticate(request: FastifyRequest, reply: FastifyReply) {
      const key = singleHeader(request, API_KEY_HEADER)
      let reservation: Reservation | undefined
      let authenticated: AuthenticatedKey | undefined
      try {
        authenticated =
          key === undefined
            ? undefined
            : await app.services.tenants.authenticate(key, async () => {
                reservation = await throttle.reserve(request)
              })
      } catch (error) {
        // Not the key's fault (the database is down): the failure is given back.
        await reservation?.refund()
        throw error
      }
      if (!authenticated) {
        const failure = reservation ?? (await throttle.reserve(request))
        failure.keep()
        throw new ApiError('unauthorized', INVALID_API_KEY)
      }
      await reservation?.refund()
      request.tenant = authenticated.tenant
      request.apiKeyId = authenticated.keyId
      // Both: Fastify writes the request's last line, `request completed`, with the reply's.
      request.log = request.log.child({ tenantId: authenticated.tenant.id })
      reply.log = request.log
    })

    const adminKey = app.config.adminApiKey
    app.decorate('authenticateAdmin', async function authenticateAdmin(request: FastifyRequest) {
      const given = singleHeader(request, ADMIN_KEY_HEADER)
      // Without ADMIN_API_KEY the admin routes exist but nobody can pass.
      if (!adminKey || !given || !secretsEqual(given, adminKey)) {
        const failure = await throttle.reserve(request)
        failure.keep()
        throw new ApiError('unauthorized', 'Invalid or missing admin key')
      }
    })
  },
  { name: 'auth', dependencies: ['services', 'failure-throttle'] },
)

function singleHeader(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name]
  const text = Array.isArray(value) ? value[0] : value
  return text?.trim() || undefined
}
