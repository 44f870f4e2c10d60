import { hash } from 'node:crypto'
import type { Database, PipelinedDatabase } from '../../db/client.js'
import { ApiError, PROPERTY_NOT_FOUND } from '../../lib/errors.js'
import type { ReferenceNames } from '../reference/reference-names.js'
import { expectedRows, pageNeedsCounts, planPage, withoutBounds, type CatalogueFilter, type CatalogueSort, type PageCounts } from './catalogue-page-plan.js'
import { CatalogueCache, type Kept } from './catalogue-cache.js'
import { CatalogueVersions } from './catalogue-versions.js'
import { placesOf, toCatalogueDetail, toCatalogueItem } from './catalogue.mapper.js'
import * as repository from './catalogue.repository.js'
import type { CatalogueDetail, CatalogueItem, CatalogueQuery, ClustersQuery, MapClusters } from './catalogue.schemas.js'
import { catalogueGeoFilterOf, cellDegrees, checkClusterBox, parseBbox } from './geo.js'

/** A catalogue answer ready to send: its JSON bytes and their ETag. */
export interface CatalogueAnswer {
  body: Buffer
  etag: string
}

/** Turns an answer's value into its JSON text: the route's serializer, compiled from its response schema. */
export type Serialize = (payload: unknown) => string

type CataloguePage = { items: CatalogueItem[]; total: number; limit: number; offset: number }

/**
 * The filter of a search or of clusters, its ranges checked. A bad map parameter, or a minimum
 * over its maximum, is a 422 naming the parameter.
 */
function filterOf(query: CatalogueQuery | ClustersQuery): CatalogueFilter {
  const { min_price, max_price, min_area, max_area } = query
  if (min_price !== undefined && max_price !== undefined && min_price > max_price) {
    throw ApiError.validation([{ loc: ['query', 'min_price'], msg: 'must not be greater than max_price' }])
  }
  if (min_area !== undefined && max_area !== undefined && min_area > max_area) {
    throw ApiError.validation([{ loc: ['query', 'min_area'], msg: 'must not be greater than max_area' }])
  }
  const geo = catalogueGeoFilterOf(query)
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
    west: geo?.box.west,
    south: geo?.box.south,
    east: geo?.box.east,
    north: geo?.box.north,
    nearLat: geo?.circle?.lat,
    nearLon: geo?.circle?.lon,
    radiusM: geo?.circle?.radiusM,
  }
}

/** A mean position to the stored precision (numeric(9,6)). */
const round6 = (degrees: number) => Math.round(degrees * 1e6) / 1e6

/** Serialises a value once, with its ETag (the SHA-1 that @fastify/etag would compute), to be kept for `cityId`. */
function answerOf(serialize: Serialize, payload: CataloguePage | CatalogueDetail | MapClusters, cityId: number | undefined): Kept<CatalogueAnswer> {
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
    const { limit, offset, sort = 'created_desc' } = query
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
      // How a page with bounds (a price range newest first, an area) is read depends on how many listings they keep.
      const counts: PageCounts | undefined = pageNeedsCounts(filter, sort)
        ? await Promise.all([totalOf(filter), totalOf(withoutBounds(filter, sort))]).then(([matches, unbounded]) => ({ matches, withoutBounds: unbounded }))
        : undefined
      const [total, rows] = await Promise.all([counts?.matches ?? totalOf(filter), this.readPage(filter, sort, limit, offset, counts)])
      await this.names.ensure(placesOf(rows))
      const items = rows.map((row) => toCatalogueItem(row, this.names, this.mediaBase))
      return answerOf(serialize, { items, total, limit, offset }, filter.cityId)
    })
  }

  /**
   * The matches in a map's box grouped on the grid of its zoom (geo.ts cellDegrees): one
   * cluster per cell with listings, counted exactly, at its listings' mean position with the
   * box that holds them. Kept like a search's answers.
   */
  async clusters(query: ClustersQuery, serialize: Serialize): Promise<CatalogueAnswer> {
    const filter = filterOf(query)
    checkClusterBox(parseBbox(query.bbox), query.zoom)
    const snapshot = await this.versions.current()
    return this.cache.get(`clusters:${query.zoom}:${JSON.stringify(Object.values(filter))}`, snapshot, async () => {
      const rows = await repository.readClusters(this.db, filter, cellDegrees(query.zoom))
      let total = 0
      const clusters = rows.map((row) => {
        total += row.count
        return { lat: round6(row.lat), lon: round6(row.lon), count: row.count, bbox: [row.west, row.south, row.east, row.north] }
      })
      return answerOf(serialize, { clusters, total }, filter.cityId)
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
