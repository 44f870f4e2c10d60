import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, failureThrottleResponse, withResponseHeaders, header } from '../../lib/schemas.js'
import { adminKeySecurity } from '../../plugins/auth.js'
import { AdminRegistrationListQuery, AdminRegistrationPage, RegistrationCodeParams, RegistrationStatus, RejectBody } from './tenants.schemas.js'

const admin = { tags: ['Admin'], security: adminKeySecurity }

/** Operators decide registration requests. Registered behind `authenticateAdmin`. */
const registrationAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/admin/registrations',
    {
      schema: {
        ...admin,
        operationId: 'listRegistrations',
        summary: 'List registration requests, newest first',
        description: 'Every request, or those in one `status`, with the applicant’s details and the decision once made.',
        querystring: AdminRegistrationListQuery,
        response: { 200: AdminRegistrationPage, ...errorResponses(401, 422), 429: failureThrottleResponse },
      },
    },
    async (request) => app.services.tenants.list(request.query),
  )

  app.post(
    '/admin/registrations/:request_code/approve',
    {
      schema: {
        ...admin,
        operationId: 'approveRegistration',
        summary: 'Approve a pending request: creates the tenant and its API key',
        description:
          'Creates the tenant and its API key, and answers with the approved status, key included (never cached). The applicant reads the same key with the request code and e-mail. A request already decided is a 409.',
        params: RegistrationCodeParams,
        response: {
          200: withResponseHeaders(RegistrationStatus, {
            'Cache-Control': header('The answer carries an API key: never cached.', { type: 'string', enum: ['no-store'] }),
          }),
          ...errorResponses(400, 401, 404, 409, 413, 415, 422),
          429: failureThrottleResponse,
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store')
      return app.services.tenants.approve(request.params.request_code)
    },
  )

  app.post(
    '/admin/registrations/:request_code/reject',
    {
      schema: {
        ...admin,
        operationId: 'rejectRegistration',
        summary: 'Reject a pending request',
        description: 'The `reason` is required and kept for the operators; the applicant sees only `rejected`. A request already decided is a 409.',
        params: RegistrationCodeParams,
        body: RejectBody,
        response: { 200: RegistrationStatus, ...errorResponses(400, 401, 404, 409, 413, 415, 422), 429: failureThrottleResponse },
      },
    },
    async (request) => app.services.tenants.reject(request.params.request_code, request.body.reason),
  )
}

export default registrationAdminRoutes
