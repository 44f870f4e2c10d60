import etag from '@fastify/etag'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError, PROPERTY_NOT_FOUND } from '../../lib/errors.js'
import { errorResponses } from '../../lib/schemas.js'
import { mediaBaseUrl } from '../images/storage.js'
import * as repository from './catalogue.repository.js'
import { CatalogueDetail, CatalogueIdParams, CataloguePage, CatalogueQuery } from './catalogue.schemas.js'

/** Deeper pages cost more to find; past this, narrow the search with filters instead. */
export const MAX_CATALOGUE_OFFSET = 10_000
/** Short enough that a new listing shows within a minute, long enough to absorb bursts. */
const CACHE_CONTROL = 'public, max-age=30'

const catalogue = { tags: ['Catalogue'] }

/** The public MLS catalogue (§4.3, D6): published listings only, no key, no owner data. */
const catalogueRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // ETag on every answer of this scope; a matching If-None-Match gets a 304 with no body.
  const mediaBase = mediaBaseUrl(app.config)
  await app.register(etag)
  app.addHook('onRequest', app.catalogueRateLimit)
  app.addHook('onSend', async (_request, reply) => {
    if (reply.statusCode === 200 || reply.statusCode === 304) reply.header('cache-control', CACHE_CONTROL)
  })

  app.get(
    '/mls/properties',
    {
      schema: {
        ...catalogue,
        summary: 'Search the published listings',
        description: `Newest first unless \`sort\` says otherwise. \`offset\` may go up to ${MAX_CATALOGUE_OFFSET} (past the last match the page is simply empty); narrow deeper searches with filters.`,
        querystring: CatalogueQuery,
        response: { 200: CataloguePage, ...errorResponses(422, 429) },
      },
    },
    async (request) => {
      const { limit, offset, sort = 'created_desc', min_price, max_price, min_area, max_area } = request.query
      if (min_price !== undefined && max_price !== undefined && min_price > max_price) {
        throw ApiError.validation([{ loc: ['query', 'min_price'], msg: 'must not be greater than max_price' }])
      }
      if (min_area !== undefined && max_area !== undefined && min_area > max_area) {
        throw ApiError.validation([{ loc: ['query', 'min_area'], msg: 'must not be greater than max_area' }])
      }
      const filter = repository.filterFromQuery(request.query)
      if (offset > MAX_CATALOGUE_OFFSET) {
        const total = await repository.countCatalogue(app.db, filter)
        if (offset >= total) return { items: [], total, limit, offset }
        throw ApiError.validation(
          [{ loc: ['query', 'offset'], msg: `must be at most ${MAX_CATALOGUE_OFFSET}` }],
          `Pages deeper than offset ${MAX_CATALOGUE_OFFSET} are not served; narrow the search with filters.`,
        )
      }
      const [total, items] = await Promise.all([
        repository.countCatalogue(app.db, filter),
        repository.findCataloguePage(app.db, filter, sort, limit, offset, mediaBase),
      ])
      return { items, total, limit, offset }
    },
  )

  app.get(
    '/mls/properties/:id',
    {
      schema: {
        ...catalogue,
        summary: 'One published listing',
        params: CatalogueIdParams,
        response: { 200: CatalogueDetail, ...errorResponses(404, 422, 429) },
      },
    },
    async (request) => {
      const detail = await repository.findCatalogueDetail(app.db, request.params.id, mediaBase)
      if (!detail) throw ApiError.notFound(PROPERTY_NOT_FOUND)
      return detail
    },
  )
}

export default catalogueRoutes
