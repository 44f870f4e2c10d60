import { hash } from 'node:crypto'
import type { Database, PipelinedDatabase } from '../../db/client.js'
import type { PropertyRow } from '../../db/schema.js'
import { ApiError, PROPERTY_NOT_FOUND } from '../../lib/errors.js'
import type { ReferenceNames } from '../reference/reference-names.js'
import { expectedRows, pageNeedsCounts, planPage, type CatalogueFilter, type CatalogueSort, type PageCounts } from './catalogue-page-plan.js'
import { CatalogueCache, type Kept } from './catalogue-cache.js'
import { CatalogueVersions } from './catalogue-versions.js'
import { placesOf, toCatalogueDetail, toCatalogueItem } from './catalogue.mapper.js'
import * as repository from './catalogue.repository.js'
import type { CatalogueDetail, CatalogueItem, CatalogueQuery } from './catalogue.schemas.js'

/** A catalogue answer ready to send: its JSON bytes and their ETag. */
export interface CatalogueAnswer {
  body: Buffer
  etag: string
}

/** Turns an answer's value into its JSON text: the route's serializer, compiled from its response schema. */
export type Serialize = (payload: unknown) => string

type CataloguePage = { items: CatalogueItem[]; total: number; limit: number; offset: number }

function filterOf(query: CatalogueQuery): CatalogueFilter {
  return {
    cityId: query.city_id,
    propertyTypeId: query.property_type_id,
    dealTypeId: query.deal_type_id,
    tenantId: query.tenant_id,
    minPrice: query.min_price,
    maxPrice: query.max_price,
    districtId: query.district_id,
    residentialComplexId: query.residential_complex_id,
    rooms: query.rooms,
    minArea: query.min_area,
    maxArea: query.max_area,
  }
}

/** Serialises a value once, with its ETag (the SHA-1 that @fastify/etag would compute), to be kept for `cityId`. */
function answerOf(serialize: Serialize, payload: CataloguePage | CatalogueDetail, cityId: number | undefined): Kept<CatalogueAnswer> {
  const body = Buffer.from(serialize(payload))
  return { value: { body, etag: `"${hash('sha1', body, 'base64')}"` }, bytes: body.length, cityId }
}

/**
 * The public catalogue: published listings only, no owner data. Answers are kept serialised
 * in this process for as long as the catalogue counters they depend on stay where they were
 * (catalogue-cache.ts), so a search never shows less than what was committed before it came.
 * Every statement stands alone: on PostgreSQL they run pipelined (db/pipelines.ts). See
 * docs/performance.md#the-catalogues-read-path.
 */
export class CatalogueService {
  private readonly versions: CatalogueVersions
  private readonly cache: CatalogueCache

  constructor(
    private readonly db: PipelinedDatabase,
    private readonly names: ReferenceNames,
    /** The base of photo URLs. */
    private readonly mediaBase: string,
    cacheBytes: number,
    /**
     * Where the catalogue's counters are read: a connection of their own, not behind the
     * catalogue's statements (see CatalogueVersions). `db` where there is one connection.
     */
    versionsDb: PipelinedDatabase = db,
  ) {
    this.versions = new CatalogueVersions(versionsDb)
    this.cache = new CatalogueCache(cacheBytes)
  }

  /** A page of a search with its total, newest first unless `sort` says otherwise. */
  async search(query: CatalogueQuery, serialize: Serialize): Promise<CatalogueAnswer> {
    const { limit, offset, sort = 'created_desc', min_price, max_price, min_area, max_area } = query
    if (min_price !== undefined && max_price !== undefined && min_price > max_price) {
      throw ApiError.validation([{ loc: ['query', 'min_price'], msg: 'must not be greater than max_price' }])
    }
    if (min_area !== undefined && max_area !== undefined && min_area > max_area) {
      throw ApiError.validation([{ loc: ['query', 'min_area'], msg: 'must not be greater than max_area' }])
    }
    const filter = filterOf(query)
    const snapshot = await this.versions.current()
    // A search's total is kept apart from its pages: its other pages and orders share it.
    const totalOf = (search: CatalogueFilter) =>
      this.cache.get(`total:${JSON.stringify(Object.values(search))}`, snapshot, async () => ({
        value: await repository.countCatalogue(this.db, search),
        bytes: 8,
        cityId: search.cityId,
      }))
    return this.cache.get(`list:${sort}:${limit}:${offset}:${JSON.stringify(Object.values(filter))}`, snapshot, async () => {
      // How a price range's page is read, newest first, depends on how many listings it keeps.
      const counts: PageCounts | undefined = pageNeedsCounts(filter, sort)
        ? await Promise.all([totalOf(filter), totalOf({ ...filter, minPrice: undefined, maxPrice: undefined })]).then(([matches, withoutPrice]) => ({
            matches,
            withoutPrice,
          }))
        : undefined
      const [total, rows] = await Promise.all([counts?.matches ?? totalOf(filter), this.readPage(filter, sort, limit, offset, counts)])
      await this.names.ensure(placesOf(rows))
      const items = rows.map((row) => toCatalogueItem(row, this.names, this.mediaBase))
      return answerOf(serialize, { items, total, limit, offset }, filter.cityId)
    })
  }

  /** One published listing; 404 for any other. */
  async detail(id: number, serialize: Serialize): Promise<CatalogueAnswer> {
    const answer = await this.cache.get(`detail:${id}`, await this.versions.current(), async () => {
      const row = await repository.findPublishedListing(this.db, id)
      if (!row) return undefined
      await this.names.ensure(placesOf([row]))
      // A listing without a city counts under city 0, as the database's counters do.
      return answerOf(serialize, toCatalogueDetail(row, this.names, this.mediaBase), row.cityId ?? 0)
    })
    if (!answer) throw ApiError.notFound(PROPERTY_NOT_FOUND)
    return answer
  }

  /** A published listing as `GET /mls/properties/{id}` shows it, read in `tx` (the payload of `mls.listing_updated`). */
  async detailOf(tx: Database, id: number): Promise<CatalogueDetail | undefined> {
    const row = await repository.findPublishedListing(tx, id)
    if (!row) return undefined
    await this.names.ensure(placesOf([row]), tx)
    return toCatalogueDetail(row, this.names, this.mediaBase)
  }

  /** A published listing's row, read in `tx`, or undefined. */
  publishedRowOf(tx: Database, id: number): Promise<PropertyRow | undefined> {
    return repository.findPublishedRow(tx, id)
  }

  /** A listing as the catalogue lists it, whatever its status, read in `tx` (the payload of `mls.new_listing`). */
  async itemOf(tx: Database, id: number): Promise<CatalogueItem | undefined> {
    const row = await repository.findListing(tx, id)
    if (!row) return undefined
    await this.names.ensure(placesOf([row]), tx)
    return toCatalogueItem(row, this.names, this.mediaBase)
  }

  /** Reads a page by its plan; a walk that falls short of the page is read again as a range. */
  private async readPage(filter: CatalogueFilter, sort: CatalogueSort, limit: number, offset: number, counts?: PageCounts) {
    if (counts && expectedRows(limit, offset, counts) === 0) return []
    const plan = planPage(filter, sort, offset + limit, counts)
    const rows = await repository.readPage(this.db, filter, sort, limit, offset, plan)
    if (counts && plan.kind === 'walk' && rows.length < expectedRows(limit, offset, counts)) {
      return repository.readPage(this.db, filter, sort, limit, offset, { kind: 'range' })
    }
    return rows
  }
}
