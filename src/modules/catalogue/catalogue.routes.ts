import fresh from 'fresh'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { FastifyReply } from 'fastify'
import { rateLimited, rateLimitedErrorResponses, rateLimitHeaders, type ResponseHeaders, header } from '../../lib/schemas.js'
import type { CatalogueAnswer } from './catalogue.service.js'
import { CatalogueDetail, CatalogueIdParams, CataloguePage, CatalogueQuery, ClustersQuery, MapClusters } from './catalogue.schemas.js'

/** Short enough that a new listing shows within a minute, long enough to absorb bursts. */
const CACHE_CONTROL = 'public, max-age=30'

const catalogue = { tags: ['Catalogue'] }

/**
 * For the OpenAPI document: the conditional request and its answers, which the hooks below
 * make (fastify-swagger reads `headers` of a response; serialization ignores them).
 */
const ConditionalRequest = Type.Object({
  'if-none-match': Type.Optional(
    // A precondition is evaluated, never refused (RFC 9110, 13.1.2): the limit is Node's on a
    // request's headers as a whole (16 KiB), which no longer list of tags held can pass.
    Type.String({ maxLength: 16_384, description: 'An ETag this client holds (a list, weak tags and `*` work too): a 304 while it is current.' }),
  ),
})
const cachingHeaders: ResponseHeaders = {
  ETag: header('The tag of this answer, for If-None-Match.', { type: 'string', pattern: '^"[A-Za-z0-9+/=]+"$', maxLength: 100 }),
  'Cache-Control': header('Caches may keep the answer this long.', { type: 'string', enum: [CACHE_CONTROL] }),
}
const NotModified = {
  type: 'null',
  description: 'Not modified: If-None-Match lists the current ETag. No body.',
  headers: { ...cachingHeaders, ...rateLimitHeaders },
}

/** An answer as it was serialised, with its ETag (which the hook below honours for 304). */
function send(reply: FastifyReply, answer: CatalogueAnswer): Buffer {
  reply.header('etag', answer.etag).type('application/json; charset=utf-8')
  return answer.body
}

/** The public MLS catalogue: published listings only, no key, no owner data. */
const catalogueRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // Every 200 of this scope carries its answer's ETag (send), and errors none. `fresh` (as Express
  // and `send` use it) matches If-None-Match as RFC 9110 says: any tag of a list, weakly, or `*`.
  // A fresh 200 becomes a 304 with no body.
  app.addHook('onRequest', app.catalogueRateLimit)
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode !== 200) return payload
    reply.header('cache-control', CACHE_CONTROL)
    // If-None-Match alone: `fresh` also reads a request's `Cache-Control: no-cache` as "answer in
    // full", which is for caches on the way. This is the origin, which must evaluate the
    // precondition (RFC 9110, 13.2.1), and fetch() adds no-cache to every If-None-Match it sends.
    const ifNoneMatch = request.headers['if-none-match']
    if (ifNoneMatch === undefined || !fresh({ 'if-none-match': ifNoneMatch }, { etag: reply.getHeader('etag') })) return payload
    reply.code(304)
    return ''
  })

  app.get(
    '/mls/properties',
    {
      schema: {
        ...catalogue,
        operationId: 'searchCatalogue',
        summary: 'Search the published listings',
        description:
          'Newest first unless `sort` says otherwise. Any `offset` is served; past the last match the page is empty. ' +
          'A deep page skips index entries, never listings, so its cost grows with the offset: ' +
          'about 1.5 ms at 10,000 and 100 ms at 850,000 on a million listings. ' +
          'To walk many pages, follow `next_cursor` instead (`cursor=`): a page by cursor costs the same at any depth, ' +
          'and listings published meanwhile neither shift nor repeat items on the pages after. Narrowing the search with filters is faster. ' +
          '`bbox` and `near` (with `radius_m`) keep the listings in an area of the map; a listing without coordinates is in none. ' +
          'With `near`, `sort=distance` lists the nearest first.',
        querystring: CatalogueQuery,
        headers: ConditionalRequest,
        response: { 200: rateLimited(CataloguePage, cachingHeaders), 304: NotModified, ...rateLimitedErrorResponses(422, 429) },
      },
    },
    async (request, reply) => send(reply, await app.services.catalogue.search(request.query, (page) => reply.serialize(page) as string)),
  )

  app.get(
    '/mls/clusters',
    {
      schema: {
        ...catalogue,
        operationId: 'getCatalogueClusters',
        summary: 'Published listings in a map’s area, grouped for the map',
        description:
          'The listings matching the filters in `bbox`, grouped on a grid that fits `zoom`: one cluster per cell with listings, ' +
          'with its exact count, its listings’ mean position and the box that holds them. `total` is the sum of the counts. ' +
          'Takes every filter of `GET /mls/properties`.',
        querystring: ClustersQuery,
        headers: ConditionalRequest,
        response: { 200: rateLimited(MapClusters, cachingHeaders), 304: NotModified, ...rateLimitedErrorResponses(422, 429) },
      },
    },
    async (request, reply) => send(reply, await app.services.catalogue.clusters(request.query, (clusters) => reply.serialize(clusters) as string)),
  )

  app.get(
    '/mls/properties/:id',
    {
      schema: {
        ...catalogue,
        operationId: 'getCatalogueProperty',
        summary: 'One published listing',
        description:
          'The catalogue item with the description, typed attributes, photo URLs and publication time; never the owner or the agency’s contacts. A listing that is not published answers 404 `Property not found`.',
        params: CatalogueIdParams,
        headers: ConditionalRequest,
        response: { 200: rateLimited(CatalogueDetail, cachingHeaders), 304: NotModified, ...rateLimitedErrorResponses(404, 422, 429) },
      },
    },
    async (request, reply) => send(reply, await app.services.catalogue.detail(request.params.id, (detail) => reply.serialize(detail) as string)),
  )
}

export default catalogueRoutes
