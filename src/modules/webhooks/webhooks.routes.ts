import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { header, locationHeader, rateLimited, rateLimitedErrorResponses, rateLimitHeaders } from '../../lib/schemas.js'
import { apiKeySecurity } from '../../plugins/auth.js'
import {
  SUBSCRIBABLE_EVENTS,
  CreatedWebhookSubscription,
  DeliveryLogEntry,
  DeliveryLogPage,
  DeliveryLogQuery,
  WebhookCreate,
  WebhookIdParams,
  WebhookSubscription,
  WebhookUpdate,
} from './webhooks.schemas.js'
import { MAX_SUBSCRIPTIONS_PER_TENANT } from './webhooks.service.js'

const tenantRoute = { tags: ['Webhooks'], security: apiKeySecurity }

const DELIVERY_NOTES = `Deliveries follow Standard Webhooks: a POST with the body \`{type, timestamp, data}\` and the headers \`webhook-id\` (\`msg_<event id>\`, the same on every attempt), \`webhook-timestamp\` and \`webhook-signature\` (\`v1,<base64 HMAC-SHA256>\` with the subscription's secret). Only a 2xx answer counts; redirects are not followed. Failed attempts are retried after the delays of WEBHOOK_RETRY_SCHEDULE (±10 %), never sooner than a \`Retry-After\` asks. A 410 answer, or 5 days without a single success, switches the subscription off (\`is_active: false\`, \`disabled_reason\`). Events: ${SUBSCRIBABLE_EVENTS.map((e) => `\`${e}\``).join(', ')}; the \`mls.*\` ones reach every agency's subscriptions, the others only the agency whose listing or feed it is.`

const FILTER_NOTES = `A \`filter\` (the filter parameters of \`GET /mls/properties\`, same types, bounds and checks; null or absent for every listing) narrows the \`mls.*\` events to listings that match it: \`mls.new_listing\` when the new listing matches, \`mls.listing_updated\` when the listing matches after the change, \`mls.listing_removed\` when it matched before. A listing that stops matching after a change is announced as \`mls.listing_removed\` with \`{id, reason: "unmatched"}\` (\`webhook-id\` \`msg_<event id>_unmatched\`), to subscriptions that chose \`mls.listing_removed\`. An invalid filter is a 422 naming the parameter, e.g. \`body.filter.min_price\`.`

/** Webhook subscriptions, test events and delivery logs. Registered behind `authenticate`. */
const webhooksRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/webhooks',
    {
      schema: {
        ...tenantRoute,
        operationId: 'createWebhook',
        summary: 'Subscribe a URL to events',
        description: `Answers with the subscription and its signing \`secret\`, shown this once. The URL must be \`https\` (plain \`http\` only where ALLOW_PRIVATE_NETWORK is on), without credentials, and its host must resolve to public addresses only; the rule is checked again at every delivery. ${FILTER_NOTES} ${DELIVERY_NOTES}`,
        body: WebhookCreate,
        response: {
          201: rateLimited(CreatedWebhookSubscription, {
            ...locationHeader('The new subscription, `/webhooks/{id}`.'),
            'Cache-Control': header('The answer carries the signing secret: never cached.', { type: 'string', enum: ['no-store'] }),
          }),
          ...rateLimitedErrorResponses(400, 401, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const created = await app.services.webhooks.create(request.tenant.id, request.body)
      return reply.code(201).header('location', `/webhooks/${created.id}`).header('cache-control', 'no-store').send(created)
    },
  )

  app.get(
    '/webhooks',
    {
      schema: {
        ...tenantRoute,
        operationId: 'listWebhooks',
        summary: 'The agency’s subscriptions',
        description: `A plain array, oldest first, without secrets; an agency has at most ${MAX_SUBSCRIPTIONS_PER_TENANT}.`,
        response: {
          200: rateLimited(Type.Array(WebhookSubscription, { maxItems: MAX_SUBSCRIPTIONS_PER_TENANT })),
          ...rateLimitedErrorResponses(401, 429),
        },
      },
    },
    async (request) => app.services.webhooks.list(request.tenant.id),
  )

  app.get(
    '/webhooks/:id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'getWebhook',
        summary: 'One of the agency’s subscriptions',
        description: 'The subscription as `GET /webhooks` lists it, without its secret. Another agency’s subscription is a 404.',
        params: WebhookIdParams,
        response: { 200: rateLimited(WebhookSubscription), ...rateLimitedErrorResponses(401, 404, 422, 429) },
      },
    },
    async (request) => app.services.webhooks.get(request.tenant.id, request.params.id),
  )

  app.patch(
    '/webhooks/:id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'updateWebhook',
        summary: 'Change a subscription',
        description: `Changes the fields given (at least one) and answers with the subscription. \`filter: null\` removes the filter; a new \`events\` or \`filter\` applies to every event fanned out after the change. The URL follows the rules of \`POST /webhooks\`. ${FILTER_NOTES}`,
        params: WebhookIdParams,
        body: WebhookUpdate,
        response: { 200: rateLimited(WebhookSubscription), ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429) },
      },
    },
    async (request) => app.services.webhooks.update(request.tenant.id, request.params.id, request.body),
  )

  app.delete(
    '/webhooks/:id',
    {
      schema: {
        ...tenantRoute,
        operationId: 'deleteWebhook',
        summary: 'Delete a subscription',
        description: 'Its pending deliveries are cancelled, and its delivery log goes with it.',
        params: WebhookIdParams,
        response: {
          204: { type: 'null', description: 'Deleted.', headers: rateLimitHeaders },
          ...rateLimitedErrorResponses(400, 401, 404, 409, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      await app.services.webhooks.remove(request.tenant.id, request.params.id)
      return reply.code(204).send(null)
    },
  )

  app.post(
    '/webhooks/:id/test',
    {
      schema: {
        ...tenantRoute,
        operationId: 'sendTestWebhook',
        summary: 'Send a test event now',
        description:
          'One immediate attempt of a `webhook.test` event, signed like any delivery, without retries; whatever the subscription’s events and state. Answers 200 with the log entry of the attempt, also when the receiver failed (see `status` and `error`).',
        params: WebhookIdParams,
        response: { 200: rateLimited(DeliveryLogEntry), ...rateLimitedErrorResponses(400, 401, 404, 413, 415, 422, 429) },
      },
    },
    async (request) => app.services.webhooks.test(request.tenant.id, request.params.id),
  )

  app.get(
    '/webhooks/:id/logs',
    {
      schema: {
        ...tenantRoute,
        operationId: 'listWebhookLogs',
        summary: 'Delivery history: one entry per attempt, newest first',
        description: 'Every attempt of every delivery to this subscription, test events included, with the receiver’s answer (first 4 KiB) or why it failed.',
        params: WebhookIdParams,
        querystring: DeliveryLogQuery,
        response: { 200: rateLimited(DeliveryLogPage), ...rateLimitedErrorResponses(401, 404, 422, 429) },
      },
    },
    async (request) => app.services.webhooks.logs(request.tenant.id, request.params.id, request.query),
  )
}

export default webhooksRoutes
