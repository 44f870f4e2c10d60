import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { rateLimited, rateLimitedErrorResponses } from '../../lib/schemas.js'
import { apiKeySecurity } from '../../plugins/auth.js'
import { TenantMe } from './tenants.schemas.js'

/** The calling tenant's own record. Registered behind `authenticate`. */
const meRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/tenants/me',
    {
      schema: {
        tags: ['Registration'],
        operationId: 'getCurrentTenant',
        summary: 'The tenant behind the API key',
        description: 'The agency the `X-API-Key` belongs to: a cheap way to check a key.',
        security: apiKeySecurity,
        response: { 200: rateLimited(TenantMe), ...rateLimitedErrorResponses(401, 429) },
      },
    },
    async (request) => app.services.tenants.me(request.tenant.id),
  )
}

export default meRoutes
