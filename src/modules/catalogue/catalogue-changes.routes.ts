import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { header, rateLimited, rateLimitedErrorResponses } from '../../lib/schemas.js'
import { ChangesPage, ChangesQuery, ChangesSnapshot } from './catalogue-changes.schemas.js'

const changes = { tags: ['Catalogue'] }
const noStore = { 'Cache-Control': header('The feed’s end moves: never cached.', { type: 'string', enum: ['no-store'] }) }

/** The catalogue's change feed: public like the catalogue, never cached (its end moves). */
const catalogueChangesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.addHook('onRequest', app.catalogueRateLimit)
  app.addHook('onSend', async (_request, reply, payload) => {
    if (reply.statusCode === 200) reply.header('cache-control', 'no-store')
    return payload
  })

  app.get(
    '/mls/changes',
    {
      schema: {
        ...changes,
        operationId: 'listCatalogueChanges',
        summary: 'Changes of the catalogue, oldest first, for mirrors',
        description:
          'Every change of what the catalogue shows, in the order the changes committed: `upsert` when a listing is published or what the catalogue shows of it changes (the listing as `GET /mls/properties/{id}` shows it), `remove` when it leaves the catalogue (with why). ' +
          'Each listing appears once, at its latest change: a mirror that applies the items in order, from the start (no `after`) or from a snapshot, equals the catalogue. ' +
          'Read on with `after=<next_cursor>`; a reader never misses a change that commits while it reads. ' +
          'Removals are kept CHANGE_RETENTION_DAYS (90 by default): a cursor older than the removals kept answers 410, and the mirror starts again from the beginning.',
        querystring: ChangesQuery,
        response: { 200: rateLimited(ChangesPage, noStore), ...rateLimitedErrorResponses(410, 422, 429) },
      },
    },
    // Sent as JSON.stringify writes it: the page is built to the schema, and the serializer
    // compiled from it would check each item against both shapes of `property` (anyOf) to choose
    // one, which cost more than the rest of a page of a thousand.
    async (request, reply) => {
      const page = await app.services.changes.read(request.query.after, request.query.limit ?? 100)
      return reply.type('application/json; charset=utf-8').send(JSON.stringify(page))
    },
  )

  app.get(
    '/mls/changes/snapshot',
    {
      schema: {
        ...changes,
        operationId: 'getCatalogueChangesSnapshot',
        summary: 'A starting cursor for a mirror that copies the catalogue first',
        description:
          'The feed’s position now. Take it before copying the catalogue (`GET /mls/properties`, `GET /mls/properties/{id}`), then read `GET /mls/changes?after=<cursor>`: the changes made while copying come again, and applying them twice changes nothing.',
        response: { 200: rateLimited(ChangesSnapshot, noStore), ...rateLimitedErrorResponses(429) },
      },
    },
    async () => app.services.changes.snapshot(),
  )
}

export default catalogueChangesRoutes
