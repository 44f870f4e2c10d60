import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { Id, Page, PageQuery, Timestamp, errorResponses } from '../../lib/schemas.js'
import { adminKeySecurity } from '../../plugins/auth.js'
import { allowEmptyBody } from '../../plugins/validation.js'
import { ModerationReasonSchema } from '../properties/properties.schemas.js'

const admin = { tags: ['Admin'], security: adminKeySecurity }

const Moderation = Type.Union([Type.Object({ checked_at: Timestamp, reasons: Type.Array(ModerationReasonSchema) }), Type.Null()])

const ListingUnderReview = Type.Object({
  id: Type.Integer(),
  tenant_id: Type.Integer(),
  status_id: Type.Integer(),
  property_type_id: Type.Integer(),
  deal_type_id: Type.Integer(),
  price: Type.Union([Type.Number(), Type.Null()]),
  city_id: Type.Union([Type.Integer(), Type.Null()]),
  description: Type.Union([Type.String(), Type.Null()]),
  attributes: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
  moderation: Moderation,
  waiting_for_check: Type.Boolean({ description: 'True until the automatic check has run.' }),
  updated_at: Timestamp,
})

const Params = Type.Object({ id: Id })

/** Operators decide listings (MODERATION_MODE=manual, or overruling the check). Behind `authenticateAdmin`. */
const moderationAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/admin/properties',
    {
      schema: {
        ...admin,
        summary: 'Listings of every agency in one status (default 1, waiting for review), with the check’s findings',
        querystring: Type.Object({ status_id: Type.Integer({ minimum: 1, maximum: 5, default: 1 }), ...PageQuery }),
        response: { 200: Page(ListingUnderReview), ...errorResponses(401, 422) },
      },
    },
    async (request) => app.services.moderation.list(request.query.status_id, request.query.limit, request.query.offset),
  )

  app.post(
    '/admin/properties/:id/approve',
    {
      schema: {
        ...admin,
        summary: 'Publish a listing waiting for review; sends mls.new_listing',
        params: Params,
        response: { 204: Type.Null({ description: 'Published.' }), ...errorResponses(401, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      await app.services.moderation.approve(request.params.id)
      return reply.code(204).send(null)
    },
  )

  app.post(
    '/admin/properties/:id/reject',
    {
      preValidation: allowEmptyBody,
      schema: {
        ...admin,
        summary: 'Reject a listing waiting for review, with a reason the agency sees',
        params: Params,
        body: Type.Object({ reason: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })) }, { additionalProperties: false }),
        response: { 204: Type.Null({ description: 'Rejected.' }), ...errorResponses(400, 401, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      await app.services.moderation.reject(request.params.id, request.body.reason)
      return reply.code(204).send(null)
    },
  )
}

export default moderationAdminRoutes
