import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, failureThrottleResponse, header, locationHeader, withResponseHeaders } from '../../lib/schemas.js'
import { adminKeySecurity } from '../../plugins/auth.js'
import {
  AdminTenant,
  ApiKey,
  ApiKeyCreateBody,
  ApiKeyListQuery,
  ApiKeyPage,
  CreatedApiKey,
  MAX_ACTIVE_KEYS,
  TenantApiKeyParams,
  TenantIdParams,
} from './tenants.schemas.js'

const admin = { tags: ['Admin'], security: adminKeySecurity }

const SUSPENSION =
  'A suspended agency’s keys are refused like unknown ones (401) on every API process within a second; its published listings leave the public catalogue; its listings waiting for the internal check wait; its pending webhook deliveries are given up and it receives none while suspended.'

/** Operators act on agencies: suspension and API keys. Registered behind `authenticateAdmin`. */
const tenantAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/admin/tenants/:tenant_id',
    {
      schema: {
        ...admin,
        operationId: 'getTenant',
        summary: 'An agency, with its suspension',
        description: 'The agency’s record as operators see it; `suspended_at` is set while it is suspended.',
        params: TenantIdParams,
        response: { 200: AdminTenant, ...errorResponses(401, 404, 422), 429: failureThrottleResponse },
      },
    },
    async (request) => app.services.tenants.tenant(request.params.tenant_id),
  )

  app.post(
    '/admin/tenants/:tenant_id/suspend',
    {
      schema: {
        ...admin,
        operationId: 'suspendTenant',
        summary: 'Suspend an agency',
        description: `${SUSPENSION} Suspending a suspended agency answers 200 and keeps the first \`suspended_at\`.`,
        params: TenantIdParams,
        response: { 200: AdminTenant, ...errorResponses(400, 401, 404, 409, 413, 415, 422), 429: failureThrottleResponse },
      },
    },
    async (request) => app.services.tenants.suspend(request.params.tenant_id),
  )

  app.post(
    '/admin/tenants/:tenant_id/unsuspend',
    {
      schema: {
        ...admin,
        operationId: 'unsuspendTenant',
        summary: 'Lift an agency’s suspension',
        description:
          'Its keys work again (those not revoked or expired meanwhile); the listings the suspension took out of the catalogue are back, as they were, without a new check and without a new `mls.new_listing`; the internal check takes up its waiting listings. Events raised while it was suspended are not delivered to it. Unsuspending an agency that is not suspended answers 200 and changes nothing.',
        params: TenantIdParams,
        response: { 200: AdminTenant, ...errorResponses(400, 401, 404, 409, 413, 415, 422), 429: failureThrottleResponse },
      },
    },
    async (request) => app.services.tenants.unsuspend(request.params.tenant_id),
  )

  app.get(
    '/admin/tenants/:tenant_id/api-keys',
    {
      schema: {
        ...admin,
        operationId: 'listTenantApiKeys',
        summary: 'An agency’s API keys, newest first',
        description: 'The same list the agency reads at `/tenants/me/api-keys`: revoked and expired keys included, never the keys themselves.',
        params: TenantIdParams,
        querystring: ApiKeyListQuery,
        response: { 200: ApiKeyPage, ...errorResponses(401, 404, 422), 429: failureThrottleResponse },
      },
    },
    async (request) => app.services.tenants.listKeysOfTenant(request.params.tenant_id, request.query),
  )

  app.post(
    '/admin/tenants/:tenant_id/api-keys',
    {
      schema: {
        ...admin,
        operationId: 'createTenantApiKey',
        summary: 'Create an API key for an agency',
        description: `For an agency whose keys an operator revoked (a leak), to hand over a new one. Answers with the key in \`key\`, shown this once; the same rules as the agency’s own creation (at most ${MAX_ACTIVE_KEYS} active keys, 409 beyond).`,
        params: TenantIdParams,
        body: ApiKeyCreateBody,
        response: {
          201: withResponseHeaders(CreatedApiKey, {
            ...locationHeader('The agency’s keys, `/admin/tenants/{tenant_id}/api-keys`.'),
            'Cache-Control': header('The answer carries an API key: never cached.', { type: 'string', enum: ['no-store'] }),
          }),
          ...errorResponses(400, 401, 404, 409, 413, 415, 422),
          429: failureThrottleResponse,
        },
      },
    },
    async (request, reply) => {
      const created = await app.services.tenants.createKey(request.params.tenant_id, request.body)
      return reply.code(201).header('location', `/admin/tenants/${request.params.tenant_id}/api-keys`).header('cache-control', 'no-store').send(created)
    },
  )

  app.post(
    '/admin/tenants/:tenant_id/api-keys/:id/revoke',
    {
      schema: {
        ...admin,
        operationId: 'revokeTenantApiKey',
        summary: 'Revoke any key of an agency',
        description:
          'The key is refused from now on, on every API process within a second. Unlike the agency, an operator may revoke its last active key; the agency then needs a new one from `POST /admin/tenants/{tenant_id}/api-keys`. Revoking a revoked key answers 200 and keeps the first `revoked_at`. A key of another agency is a 404.',
        params: TenantApiKeyParams,
        response: { 200: ApiKey, ...errorResponses(400, 401, 404, 413, 415, 422), 429: failureThrottleResponse },
      },
    },
    async (request) => app.services.tenants.revokeKey(request.params.tenant_id, request.params.id),
  )
}

export default tenantAdminRoutes
