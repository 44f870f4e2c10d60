import { createHash } from 'node:crypto'
import etag from '@fastify/etag'
import fresh from 'fresh'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { FastifyReply } from 'fastify'
import { ApiError, PROPERTY_NOT_FOUND } from '../../lib/errors.js'
import { rateLimited, rateLimitedErrorResponses, rateLimitHeaders, type ResponseHeaders, header } from '../../lib/schemas.js'
import { mediaBaseUrl } from '../images/storage.js'
import { CatalogueCache, type Kept } from './catalogue-cache.js'
import { CatalogueVersions } from './catalogue-versions.js'
import * as repository from './catalogue.repository.js'
import { CatalogueDetail, CatalogueIdParams, CataloguePage, CatalogueQuery } from './catalogue.schemas.js'

/** Short enough that a new listing shows within a minute, long enough to absorb bursts. */
const CACHE_CONTROL = 'public, max-age=30'

const catalogue = { tags: ['Catalogue'] }

/**
 * For the OpenAPI document: the conditional request and its answers, which the hooks below
 * make (fastify-swagger reads `headers` of a response; serialization ignores them).
 */
const ConditionalRequest = Type.Object({
  'if-none-match': Type.Optional(
    Type.String({ maxLength: 2000, description: 'An ETag this client holds (a list, weak tags and `*` work too): a 304 while it is current.' }),
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

/** A catalogue answer ready to send: its JSON bytes and their ETag. */
interface Answer {
  body: Buffer
  etag: string
}

/**
 * The route's 200 body as JSON bytes, through the serializer compiled from its response schema,
 * with its ETag (the SHA-1 that @fastify/etag would compute), to be kept for `cityId`.
 */
function answerOf(reply: FastifyReply, payload: unknown, cityId: number | undefined): Kept<Answer> {
  // The compiled serializer of a JSON schema returns a string.
  const body = Buffer.from(reply.serialize(payload) as string)
  return { value: { body, etag: `"${createHash('sha1').update(body).digest('base64')}"` }, bytes: body.length, cityId }
}

/** A kept answer as it was serialised, with its ETag (which @fastify/etag then honours for 304). */
function send(reply: FastifyReply, answer: Answer): Buffer {
  reply.header('etag', answer.etag).type('application/json; charset=utf-8')
  return answer.body
}

/** The public MLS catalogue (§4.3, D6): published listings only, no key, no owner data. */
const catalogueRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const mediaBase = mediaBaseUrl(app.config)
  // Every statement of the catalogue stands alone: pipelined, on PostgreSQL (db/pipelines.ts).
  const db = app.database.pipelined
  const versions = new CatalogueVersions(db)
  const cache = new CatalogueCache(app.config.catalogueCacheBytes)
  // ETag on every answer of this scope. @fastify/etag compares If-None-Match with it as one
  // value only; `fresh` (as Express and `send` use it) matches as RFC 9110 says: any tag of a
  // list, weakly, or `*`. A fresh 200 becomes a 304 with no body.
  await app.register(etag, { replyWith304: false })
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
          'about 1.5 ms at 10,000 and 100 ms at 850,000 on a million listings. Narrowing the search with filters is faster.',
        querystring: CatalogueQuery,
        headers: ConditionalRequest,
        response: { 200: rateLimited(CataloguePage, cachingHeaders), 304: NotModified, ...rateLimitedErrorResponses(422, 429) },
      },
    },
    async (request, reply) => {
      const { limit, offset, sort = 'created_desc', min_price, max_price, min_area, max_area } = request.query
      if (min_price !== undefined && max_price !== undefined && min_price > max_price) {
        throw ApiError.validation([{ loc: ['query', 'min_price'], msg: 'must not be greater than max_price' }])
      }
      if (min_area !== undefined && max_area !== undefined && min_area > max_area) {
        throw ApiError.validation([{ loc: ['query', 'min_area'], msg: 'must not be greater than max_area' }])
      }
      const filter = repository.filterFromQuery(request.query)
      const snapshot = await versions.current()
      // A search's total is kept apart from its pages: its other pages and orders share it.
      const totalOf = (search: repository.CatalogueFilter) =>
        cache.get(`total:${JSON.stringify(Object.values(search))}`, snapshot, async () => ({
          value: await repository.countCatalogue(db, search),
          bytes: 8,
          cityId: search.cityId,
        }))
      const answer = await cache.get(`list:${sort}:${limit}:${offset}:${JSON.stringify(Object.values(filter))}`, snapshot, async () => {
        // How a price range's page is read, newest first, depends on how many listings it keeps.
        const counts = repository.pageNeedsCounts(filter, sort)
          ? await Promise.all([totalOf(filter), totalOf({ ...filter, minPrice: undefined, maxPrice: undefined })]).then(([matches, withoutPrice]) => ({
              matches,
              withoutPrice,
            }))
          : undefined
        const [matches, items] = await Promise.all([
          counts?.matches ?? totalOf(filter),
          repository.findCataloguePage(db, filter, sort, limit, offset, mediaBase, counts),
        ])
        return answerOf(reply, { items, total: matches, limit, offset }, filter.cityId)
      })
      return send(reply, answer)
    },
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
    async (request, reply) => {
      const answer = await cache.get(`detail:${request.params.id}`, await versions.current(), async () => {
        const detail = await repository.findCatalogueDetail(db, request.params.id, mediaBase)
        // A listing without a city counts under city 0, as the database's counters do.
        return detail && answerOf(reply, detail, detail.city?.id ?? 0)
      })
      if (!answer) throw ApiError.notFound(PROPERTY_NOT_FOUND)
      return send(reply, answer)
    },
  )
}

export default catalogueRoutes
