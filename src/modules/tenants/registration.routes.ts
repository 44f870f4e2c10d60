import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { REGISTRATION_LOOKUP_ROUTE } from '../../lib/log.js'
import { locationHeader, rateLimited, rateLimitedErrorResponses, header } from '../../lib/schemas.js'
import { RegistrationCodeParams, RegistrationCreateBody, RegistrationCreated, RegistrationStatus, RegistrationStatusQuery } from './tenants.schemas.js'

const registration = { tags: ['Registration'] }

/** Public: apply to become a tenant and read the application's status (and, once approved, the key). */
const registrationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/tenants/register',
    {
      config: { rateLimit: app.rateLimitFor('registration') },
      schema: {
        ...registration,
        operationId: 'registerTenant',
        summary: 'Apply to become a tenant',
        description:
          'Creates a pending registration request. Keep `request_code`: with the e-mail it reads the status, and once an operator approves the request, the API key.',
        body: RegistrationCreateBody,
        response: {
          201: rateLimited(RegistrationCreated, locationHeader('Where to read the request’s status, `/tenants/register/{request_code}` (add `?email=`).')),
          ...rateLimitedErrorResponses(400, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const created = await app.services.tenants.register(request.body)
      return reply.code(201).header('location', `/tenants/register/${created.request_code}`).send(created)
    },
  )

  app.get(
    REGISTRATION_LOOKUP_ROUTE,
    {
      onRequest: app.registrationStatusRateLimit,
      schema: {
        ...registration,
        operationId: 'getRegistrationStatus',
        summary: 'Read a registration request’s status (and the API key once approved)',
        description:
          'An unknown code and a wrong e-mail give the same 404 `Registration request not found`, so codes cannot be probed. `tenant_id` and `api_key` are present only when the request is `approved`.',
        params: RegistrationCodeParams,
        querystring: RegistrationStatusQuery,
        response: {
          200: rateLimited(RegistrationStatus, {
            'Cache-Control': header('The answer may carry an API key: never cached.', { type: 'string', enum: ['no-store'] }),
          }),
          ...rateLimitedErrorResponses(404, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const status = await app.services.tenants.statusForApplicant(request.params.request_code, request.query.email)
      // The answer may carry an API key: never let a cache keep it.
      reply.header('cache-control', 'no-store')
      return status
    },
  )
}

export default registrationRoutes
