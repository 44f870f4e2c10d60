import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { header, locationHeader, rateLimited, rateLimitedErrorResponses, rateLimitHeaders } from '../../lib/schemas.js'
import { apiKeySecurity } from '../../plugins/auth.js'
import { ApiError } from '../../lib/errors.js'
import {
  EXTERNAL_ID_RULE,
  ExternalIdParams,
  IdempotencyHeaders,
  NewPropertySubmission,
  Property,
  PropertyIdParams,
  PropertyListQuery,
  PropertyPage,
  PropertyPatch,
  PropertySubmission,
  StatusChangeBody,
  StatusConflict,
} from './properties.schemas.js'

const tenantRoute = { tags: ['Properties'], security: apiKeySecurity }

/** The tenant's own properties. Registered behind `authenticate`. */
const propertiesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/properties',
    {
      schema: {
        ...tenantRoute,
        operationId: 'createProperty',
        summary: 'Submit a property to the MLS',
        description:
          'Creates the property in status 1 (На проверке). The owner is created, or updated when the agency already has an owner with that phone. The internal check runs in the background within seconds; on approval the listing is published and `mls.new_listing` is sent. An `external_id` another listing of the agency has is a 409. With `Idempotency-Key`, a retry with the same body within 24 h replays the first response (`Idempotent-Replayed: true`).',
        headers: IdempotencyHeaders,
        body: NewPropertySubmission,
        response: {
          201: rateLimited(Property, {
            ...locationHeader('The new property, `/properties/{id}`.'),
            'Idempotent-Replayed': header('`true` when this answer replays the first response to the same `Idempotency-Key` and body.', {
              type: 'string',
              enum: ['true'],
            }),
          }),
          ...rateLimitedErrorResponses(400, 401, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const result = await app.services.properties.create(request.tenant, request.body, request.headers['idempotency-key'])
      if (result.replayed) reply.header('idempotent-replayed', 'true')
      // Only a 201 is ever stored for replay.
      return reply.code(201).header('location', `/properties/${result.body.id}`).send(result.body)
    },
  )

  app.get(
    '/properties',
    {
      schema: {
        ...tenantRoute,
        operationId: 'listProperties',
        summary: 'The agency’s properties, newest first',
        description: 'Every listing of the calling agency, in any status, newest first; the filters narrow it. Without filters, all of them, a page at a time.',
        querystring: PropertyListQuery,
        response: { 200: rateLimited(PropertyPage), ...rateLimitedErrorResponses(401, 422, 429) },
      },
    },
    async (request) => app.services.properties.list(request.tenant.id, request.query),
  )

  app.get(
    '/properties/:id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'getProperty',
        summary: 'One of the agency’s properties, with owner, location, attributes and the check’s findings',
        description: 'Another agency’s property answers 404, exactly like one that does not exist.',
        params: PropertyIdParams,
        response: { 200: rateLimited(Property), ...rateLimitedErrorResponses(401, 404, 422, 429) },
      },
    },
    async (request) => app.services.properties.get(request.tenant.id, request.params.id),
  )

  app.patch(
    '/properties/:id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'updateProperty',
        summary: 'Change a property; the change goes through the internal check',
        description:
          '`owner` and `location` are replaced whole (null clears them), `attributes` are merged (null removes one). ' +
          '`external_id` sets or (null) clears the agency’s own id of the listing, whatever its status, without the check; an id another listing of the agency has is a 409. ' +
          'A change of a published listing (status 2) becomes its `revision`: the listing stays published, and the catalogue shows the approved version until the check passes the revision, then the new one at once; a rejected revision leaves the listing as it was. ' +
          'A change of a listing in another status sends it back to status 1 for the check. A PATCH that changes nothing leaves the listing, and its status, as it is.',
        params: PropertyIdParams,
        body: PropertyPatch,
        response: { 200: rateLimited(Property), ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429) },
      },
    },
    async (request) => app.services.properties.update(request.tenant, request.params.id, request.body),
  )

  app.delete(
    '/properties/:id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'deleteProperty',
        summary: 'Delete a property with its photos',
        description:
          'Removes the listing, its photos and their files; a published listing leaves the catalogue at once. While the agency is suspended its listings are held: a 409.',
        params: PropertyIdParams,
        response: {
          204: { type: 'null', description: 'Deleted.', headers: rateLimitHeaders },
          ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      await app.services.properties.remove(request.tenant.id, request.params.id)
      return reply.code(204).send(null)
    },
  )

  app.put(
    '/properties/by-external-id/:external_id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'putPropertyByExternalId',
        summary: 'Create or replace the agency’s listing with this external id',
        description:
          'Creates the listing with this `external_id` (201, status 1, as `POST /properties`), or replaces the whole of it (200): fields not sent become null or empty, and `attributes` replace the listing’s (not merged). ' +
          'The same validation and internal check as a PATCH: a change of a published listing becomes its `revision`, a change of another sends it back to status 1, a closed listing cannot be changed (409); a PUT that changes nothing leaves the listing, and its status, as it is. ' +
          'Percent-encode the id in the path (`/` as `%2F`). Another agency’s listing with the same external id is another listing: never seen, never touched.',
        params: ExternalIdParams,
        body: PropertySubmission,
        response: {
          200: rateLimited(Property),
          201: rateLimited(Property, locationHeader('The new property, `/properties/{id}`.')),
          ...rateLimitedErrorResponses(400, 401, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const result = await app.services.properties.putByExternalId(request.tenant, request.params.external_id, request.body)
      if (!result.created) return reply.code(200).send(result.property)
      return reply.code(201).header('location', `/properties/${result.property.id}`).send(result.property)
    },
  )

  app.get(
    '/properties/by-external-id/:external_id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'getPropertyByExternalId',
        summary: 'The agency’s listing with this external id',
        description: 'The listing as `GET /properties/{id}` shows it; 404 when the agency has none with this id. Percent-encode the id in the path.',
        params: ExternalIdParams,
        response: { 200: rateLimited(Property), ...rateLimitedErrorResponses(401, 404, 422, 429) },
      },
    },
    async (request) => app.services.properties.getByExternalId(request.tenant.id, request.params.external_id),
  )

  app.delete(
    '/properties/by-external-id/:external_id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'deletePropertyByExternalId',
        summary: 'Delete the agency’s listing with this external id, with its photos',
        description: 'As `DELETE /properties/{id}`; 404 when the agency has none with this id. Percent-encode the id in the path.',
        params: ExternalIdParams,
        response: {
          204: { type: 'null', description: 'Deleted.', headers: rateLimitHeaders },
          ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      await app.services.properties.removeByExternalId(request.tenant.id, request.params.external_id)
      return reply.code(204).send(null)
    },
  )

  // An empty external id leaves `/properties/by-external-id/`, which the router, ignoring a
  // trailing slash, would take for `/properties/{id}`: it breaks the id's rule, and is told so.
  for (const method of ['GET', 'PUT', 'DELETE'] as const) {
    app.route({
      method,
      url: '/properties/by-external-id',
      // Any body: the answer is about the path.
      schema: { hide: true, ...(method === 'PUT' ? { body: {} } : {}) },
      handler: async () => {
        throw ApiError.validation([{ loc: ['path', 'external_id'], msg: EXTERNAL_ID_RULE }])
      },
    })
  }

  app.delete(
    '/properties/:id/revision',
    {
      schema: {
        ...tenantRoute,
        operationId: 'discardPropertyRevision',
        summary: 'Discard the pending or rejected change of a published listing',
        description:
          'Back to the approved version, which the catalogue shows: `GET /properties/{id}` then shows it, with `revision: null`. A listing without a revision answers 404.',
        params: PropertyIdParams,
        response: {
          204: { type: 'null', description: 'Discarded.', headers: rateLimitHeaders },
          ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      await app.services.properties.discardRevision(request.tenant.id, request.params.id)
      return reply.code(204).send(null)
    },
  )

  app.post(
    '/properties/:id/status',
    {
      schema: {
        ...tenantRoute,
        operationId: 'changePropertyStatus',
        summary: 'Withdraw (2→4), close (2→5) or resubmit (3→1, 4→1) a property',
        description: 'Any other move is a 409 whose `allowed_moves` lists the moves possible from the current status.',
        params: PropertyIdParams,
        body: StatusChangeBody,
        response: {
          200: rateLimited(Property),
          ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429),
          409: rateLimited(StatusConflict, {}, 'The move is not allowed from the current status; `allowed_moves` lists those that are.'),
        },
      },
    },
    async (request) => app.services.properties.changeStatus(request.tenant.id, request.params.id, request.body.status_id),
  )
}

export default propertiesRoutes
