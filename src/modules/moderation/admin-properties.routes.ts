import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, failureThrottleResponse } from '../../lib/schemas.js'
import { adminKeySecurity } from '../../plugins/auth.js'
import { ListingApproval, ListingIdParams, ListingRejection, ListingUnderReview, ListingUnderReviewPage, ReviewListQuery } from './moderation.schemas.js'

const admin = { tags: ['Admin'], security: adminKeySecurity }

/** Operators decide listings (MODERATION_MODE=manual, or overruling the check). Behind `authenticateAdmin`. */
const moderationAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/admin/properties',
    {
      schema: {
        ...admin,
        operationId: 'listListingsForReview',
        summary: 'Listings of every agency in one status (default 1, waiting for review), with the check’s findings',
        description: 'Oldest change first, so the longest-waiting listing comes first. `moderation` holds the internal check’s findings once it has run.',
        querystring: ReviewListQuery,
        response: { 200: ListingUnderReviewPage, ...errorResponses(401, 422), 429: failureThrottleResponse },
      },
    },
    async (request) => app.services.moderation.list(request.query.status_id, request.query.limit, request.query.offset, request.query.revision),
  )

  app.post(
    '/admin/properties/:id/approve',
    {
      schema: {
        ...admin,
        operationId: 'approveListing',
        summary: 'Publish a listing, or a published listing’s change, waiting for review',
        description:
          'Publishes the listing whatever the check found, and announces it in the same transaction: `mls.new_listing` to the MLS, `property.published` to its agency. For a published listing with a revision waiting (`GET /admin/properties?revision=pending_review`), the revision becomes the listing the catalogue shows, announced as `mls.listing_updated`. Only a listing in status 1 or such a revision can be decided, and only one with a location (the catalogue lists every listing under its city) whose description holds no contacts (the check’s `contacts_in_description`, which an operator cannot overrule: the public catalogue never carries contacts); otherwise 409. With the `version` the operator read, a listing changed since is a 409 instead. Answers with the listing as `GET /admin/properties` shows it, once decided.',
        params: ListingIdParams,
        body: ListingApproval,
        response: { 200: ListingUnderReview, ...errorResponses(400, 401, 404, 409, 413, 415, 422), 429: failureThrottleResponse },
      },
    },
    async (request) => app.services.moderation.approve(request.params.id, request.body?.version),
  )

  app.post(
    '/admin/properties/:id/reject',
    {
      schema: {
        ...admin,
        operationId: 'rejectListing',
        summary: 'Reject a listing waiting for review, with a reason the agency sees',
        description:
          'Moves the listing to status 3 with the check’s findings and a `rejected_by_moderator` reason carrying `reason`, and sends `property.rejected` to its agency. A published listing’s waiting revision is rejected instead, and the listing stays published as it was. The body is optional. Only a listing in status 1 or such a revision can be decided, and not while its agency is suspended: it receives no event then, so the rejection would never reach it (otherwise 409). With the `version` the operator read, a listing changed since is a 409 instead. Answers with the listing as `GET /admin/properties` shows it, once decided.',
        params: ListingIdParams,
        body: ListingRejection,
        response: { 200: ListingUnderReview, ...errorResponses(400, 401, 404, 409, 413, 415, 422), 429: failureThrottleResponse },
      },
    },
    async (request) => app.services.moderation.reject(request.params.id, request.body.reason, request.body.version),
  )
}

export default moderationAdminRoutes
