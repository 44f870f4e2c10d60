import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { locationHeader, rateLimited, rateLimitedErrorResponses, rateLimitHeaders } from '../../lib/schemas.js'
import { apiKeySecurity } from '../../plugins/auth.js'
import {
  Feed,
  FeedCreate,
  FeedIdParams,
  FeedPage,
  FeedPageQuery,
  FeedRunPage,
  FeedRunParams,
  FeedRunReport,
  FeedRunSummary,
  FeedUpdate,
} from './feeds.schemas.js'
import { MAX_FEEDS_PER_TENANT } from './feeds.service.js'

const tenantRoute = { tags: ['Feeds'], security: apiKeySecurity }

const URL_NOTES =
  'The URL must be `https` (plain `http` only where ALLOW_PRIVATE_NETWORK is on), without credentials, and its host must resolve to public addresses only; the rule is checked again at every download.'

/** An agency's feeds and their runs. Registered behind `authenticate`. See docs/feeds.md. */
const feedsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/feeds',
    {
      schema: {
        ...tenantRoute,
        operationId: 'createFeed',
        summary: 'Connect a feed',
        description: `Its first run starts within the worker’s next poll, then every \`schedule\` minutes. ${URL_NOTES} An agency has at most ${MAX_FEEDS_PER_TENANT} feeds (a 409 past that).`,
        body: FeedCreate,
        response: {
          201: rateLimited(Feed, locationHeader('The new feed, `/feeds/{id}`.')),
          ...rateLimitedErrorResponses(400, 401, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const created = await app.services.feeds.create(request.tenant.id, request.body)
      return reply.code(201).header('location', `/feeds/${created.id}`).send(created)
    },
  )

  app.get(
    '/feeds',
    {
      schema: {
        ...tenantRoute,
        operationId: 'listFeeds',
        summary: 'The agency’s feeds',
        description: 'Oldest first, each with its last run.',
        querystring: FeedPageQuery,
        response: { 200: rateLimited(FeedPage), ...rateLimitedErrorResponses(401, 422, 429) },
      },
    },
    async (request) => app.services.feeds.list(request.tenant.id, request.query),
  )

  app.get(
    '/feeds/:id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'getFeed',
        summary: 'A feed and its last run',
        description: '`last_run` is the newest run, whatever its status (`running` while one is under way); null before the first.',
        params: FeedIdParams,
        response: { 200: rateLimited(Feed), ...rateLimitedErrorResponses(401, 404, 422, 429) },
      },
    },
    async (request) => app.services.feeds.get(request.tenant.id, request.params.id),
  )

  app.patch(
    '/feeds/:id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'updateFeed',
        summary: 'Change a feed',
        description: `Changes the fields given (at least one). A new \`url\` is downloaded whole at the next run; a new \`schedule\` counts from now. ${URL_NOTES}`,
        params: FeedIdParams,
        body: FeedUpdate,
        response: { 200: rateLimited(Feed), ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429) },
      },
    },
    async (request) => app.services.feeds.update(request.tenant.id, request.params.id, request.body),
  )

  app.delete(
    '/feeds/:id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'deleteFeed',
        summary: 'Disconnect a feed',
        description: 'Its runs and reports go with it; the listings it brought in stay, as the agency’s own.',
        params: FeedIdParams,
        response: {
          204: { type: 'null', description: 'Deleted.', headers: rateLimitHeaders },
          ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      await app.services.feeds.remove(request.tenant.id, request.params.id)
      return reply.code(204).send(null)
    },
  )

  app.post(
    '/feeds/:id/runs',
    {
      schema: {
        ...tenantRoute,
        operationId: 'runFeed',
        summary: 'Run a feed now',
        description:
          'Answers 202 with the run, `running`; a worker takes it at once. A 409 while a run of the feed is under way (scheduled or not). Follow it with `GET /feeds/{id}/runs/{run_id}`, or the `feed.run_finished` webhook.',
        params: FeedIdParams,
        response: {
          202: rateLimited(FeedRunSummary, locationHeader('The run, `/feeds/{id}/runs/{run_id}`.')),
          ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const run = await app.services.feeds.startRun(request.tenant.id, request.params.id)
      return reply.code(202).header('location', `/feeds/${run.feed_id}/runs/${run.id}`).send(run)
    },
  )

  app.get(
    '/feeds/:id/runs',
    {
      schema: {
        ...tenantRoute,
        operationId: 'listFeedRuns',
        summary: 'A feed’s runs, newest first',
        description: 'Each run’s status, timings and counts; its problems are in `GET /feeds/{id}/runs/{run_id}`.',
        params: FeedIdParams,
        querystring: FeedPageQuery,
        response: { 200: rateLimited(FeedRunPage), ...rateLimitedErrorResponses(401, 404, 422, 429) },
      },
    },
    async (request) => app.services.feeds.runs(request.tenant.id, request.params.id, request.query),
  )

  app.get(
    '/feeds/:id/runs/:run_id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'getFeedRun',
        summary: 'A run’s report',
        description:
          'Its status, timings and counts, and its problems offer by offer in the order found, a page at a time (`limit`, `offset`; `problems.total` counts them all).',
        params: FeedRunParams,
        querystring: FeedPageQuery,
        response: { 200: rateLimited(FeedRunReport), ...rateLimitedErrorResponses(401, 404, 422, 429) },
      },
    },
    async (request) => app.services.feeds.report(request.tenant.id, request.params.id, request.params.run_id, request.query),
  )
}

export default feedsRoutes
