import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../lib/schemas.js'
import { adminKeySecurity } from '../../plugins/auth.js'
import { allowEmptyBody } from '../../plugins/validation.js'
import { AdminRegistrationListQuery, AdminRegistrationPage, RegistrationCodeParams, RegistrationStatus, RejectBody } from './tenants.schemas.js'

const admin = { tags: ['Admin'], security: adminKeySecurity }

/** Operators decide registration requests. Registered behind `authenticateAdmin`. */
const registrationAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/admin/registrations',
    {
      schema: {
        ...admin,
        summary: 'List registration requests, newest first',
        querystring: AdminRegistrationListQuery,
        response: { 200: AdminRegistrationPage, ...errorResponses(401, 422) },
      },
    },
    async (request) => app.services.tenants.list(request.query),
  )

  app.post(
    '/admin/registrations/:request_code/approve',
    {
      schema: {
        ...admin,
        summary: 'Approve a pending request: creates the tenant and its API key',
        params: RegistrationCodeParams,
        response: { 200: RegistrationStatus, ...errorResponses(401, 404, 409, 422) },
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
      // The reason is optional, so is the whole body: a bare POST rejects.
      preValidation: allowEmptyBody,
      schema: {
        ...admin,
        summary: 'Reject a pending request',
        params: RegistrationCodeParams,
        body: RejectBody,
        response: { 200: RegistrationStatus, ...errorResponses(400, 401, 404, 409, 422) },
      },
    },
    async (request) => app.services.tenants.reject(request.params.request_code, request.body.reason),
  )
}

export default registrationAdminRoutes
