import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { CountryCode } from 'libphonenumber-js'
import { LRUCache } from 'lru-cache'
import { ApiError, INVALID_API_KEY } from '../lib/errors.js'
import { digestSecret, secretsEqual } from '../lib/secrets.js'
import { findTenantByKeyDigest } from '../modules/tenants/tenants.repository.js'

/** The agency behind the API key of the current request. */
export interface AuthenticatedTenant {
  id: number
  companyName: string
  /** Drives phone normalisation for the tenant's owners. */
  country: CountryCode
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `authenticate`; read only in routes registered behind it. */
    tenant: AuthenticatedTenant
  }
  interface FastifyInstance {
    /** onRequest hook: `X-API-Key` → `request.tenant`, or 401 (§5). */
    authenticate: onRequestHookHandler
    /** onRequest hook: `X-Admin-Key` must equal ADMIN_API_KEY, or 401 (D3). */
    authenticateAdmin: onRequestHookHandler
  }
}

export const API_KEY_HEADER = 'x-api-key'
export const KEY_CACHE_TTL_MS = 10_000
export const ADMIN_KEY_HEADER = 'x-admin-key'

/** The OpenAPI security requirement of routes behind `authenticate`. */
export const apiKeySecurity = [{ ApiKey: [] }]
export const adminKeySecurity = [{ AdminKey: [] }]

export default fp(
  async function authPlugin(app: FastifyInstance) {
    app.decorateRequest('tenant', null as unknown as AuthenticatedTenant)

    // Known keys are remembered briefly, sparing a query on every authenticated request; a
    // revoked key therefore keeps working for at most KEY_CACHE_TTL_MS in a process that saw it.
    const knownKeys = new LRUCache<string, AuthenticatedTenant>({ max: 10_000, ttl: KEY_CACHE_TTL_MS })

    app.decorate('authenticate', async function authenticate(request: FastifyRequest) {
      const key = singleHeader(request, API_KEY_HEADER)
      if (!key) throw new ApiError('unauthorized', INVALID_API_KEY)
      const digest = digestSecret(key)
      let tenant = knownKeys.get(digest)
      if (!tenant) {
        tenant = await findTenantByKeyDigest(app.db, digest)
        if (!tenant) throw new ApiError('unauthorized', INVALID_API_KEY)
        knownKeys.set(digest, tenant)
      }
      request.tenant = tenant
      request.log = request.log.child({ tenantId: tenant.id })
    })

    const adminKey = app.config.adminApiKey
    app.decorate('authenticateAdmin', async function authenticateAdmin(request: FastifyRequest) {
      const given = singleHeader(request, ADMIN_KEY_HEADER)
      // Without ADMIN_API_KEY the admin routes exist but nobody can pass (D1).
      if (!adminKey || !given || !secretsEqual(given, adminKey)) {
        throw new ApiError('unauthorized', 'Invalid or missing admin key')
      }
    })
  },
  { name: 'auth', dependencies: ['database'] },
)

function singleHeader(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name]
  const text = Array.isArray(value) ? value[0] : value
  return text?.trim() || undefined
}
