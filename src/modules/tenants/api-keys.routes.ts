import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { header, locationHeader, rateLimited, rateLimitedErrorResponses, rateLimitHeaders } from '../../lib/schemas.js'
import { apiKeySecurity } from '../../plugins/auth.js'
import { ApiKeyCreateBody, ApiKeyIdParams, ApiKeyListQuery, ApiKeyPage, CreatedApiKey, MAX_ACTIVE_KEYS } from './tenants.schemas.js'

const tenantRoute = { tags: ['API keys'], security: apiKeySecurity }

const ROTATION = 'To rotate without downtime: create a new key, deploy it, check that the old key’s `last_used_at` no longer moves, then revoke the old key.'

/** The agency's own API keys: list, create, revoke. Registered behind `authenticate`. */
const apiKeysRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/tenants/me/api-keys',
    {
      schema: {
        ...tenantRoute,
        operationId: 'listApiKeys',
        summary: 'The agency’s API keys, newest first',
        description: `Every key of the agency, revoked and expired ones included (see \`revoked_at\` and \`expires_at\`), never the keys themselves: \`prefix\` tells them apart. \`last_used_at\` is written at most once a minute per key and API process. ${ROTATION}`,
        querystring: ApiKeyListQuery,
        response: { 200: rateLimited(ApiKeyPage), ...rateLimitedErrorResponses(401, 422, 429) },
      },
    },
    async (request) => app.services.tenants.listKeys(request.tenant.id, request.query),
  )

  app.post(
    '/tenants/me/api-keys',
    {
      schema: {
        ...tenantRoute,
        operationId: 'createApiKey',
        summary: 'Create an API key',
        description: `Answers with the new key in \`key\`, shown this once: only its digest is kept. It works at once, beside the agency’s other keys. With \`expires_in_days\` it is refused from then on, like an unknown key. An agency may have at most ${MAX_ACTIVE_KEYS} active keys (neither revoked nor expired); one more is a 409. ${ROTATION}`,
        body: ApiKeyCreateBody,
        response: {
          201: rateLimited(CreatedApiKey, {
            ...locationHeader('The agency’s keys, `/tenants/me/api-keys` (a key has no page of its own).'),
            'Cache-Control': header('The answer carries an API key: never cached.', { type: 'string', enum: ['no-store'] }),
          }),
          ...rateLimitedErrorResponses(400, 401, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const created = await app.services.tenants.createKey(request.tenant.id, request.body, request.apiKeyId)
      return reply.code(201).header('location', '/tenants/me/api-keys').header('cache-control', 'no-store').send(created)
    },
  )

  app.delete(
    '/tenants/me/api-keys/:id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        description:
          'The key is refused from now on, on every API process within a second; it stays in the list with its `revoked_at`. Revoking a revoked key answers 204 again and changes nothing. The agency’s last active key cannot be revoked (409): create another first. Another agency’s key is a 404, like a missing one.',
        params: ApiKeyIdParams,
        response: {
          204: { type: 'null', description: 'Revoked.', headers: rateLimitHeaders },
          ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      await app.services.tenants.revokeOwnKey(request.tenant.id, request.params.id, request.apiKeyId)
      return reply.code(204).send(null)
    },
  )
}

export default apiKeysRoutes
