import { hash } from 'node:crypto'
import type { Database, PipelinedDatabase } from '../../db/client.js'
import type { PropertyRow } from '../../db/schema.js'
import { refuseOffsetWithCursor } from '../../lib/cursor.js'
import { ApiError, PROPERTY_NOT_FOUND, type FieldError } from '../../lib/errors.js'
import type { ReferenceNames } from '../reference/reference-names.js'
import { cursorAfter, keysetsAfter, positionOf, type Keyset } from './catalogue-cursor.js'
import {
  expectedRows,
  matchesIndexFor,
  needsMatchesIndex,
  pageNeedsCounts,
  planPage,
  priceIndexedPart,
  withoutBounds,
  type CatalogueFilter,
  type CatalogueSort,
  type MatchesIndex,
  type PageCounts,
} from './catalogue-page-plan.js'
import { CatalogueCache, type Kept } from './catalogue-cache.js'
import { CatalogueVersions, type CatalogueSnapshot } from './catalogue-versions.js'
import { placesOf, toCatalogueDetail, toCatalogueItem } from './catalogue.mapper.js'
import * as repository from './catalogue.repository.js'
import type { CatalogueDetail, CatalogueItem, CatalogueQuery, ClustersQuery, MapClusters } from './catalogue.schemas.js'
import { cellDegrees, clusterBoxProblems } from './geo.js'
import { filterErrors, geoOf } from './listing-filter.js'

/** A catalogue answer ready to send: its JSON bytes and their ETag. */
export interface CatalogueAnswer {
  body: Buffer
  etag: string
}

/** Turns an answer's value into its JSON text: the route's serializer, compiled from its response schema. */
export type Serialize = (payload: unknown) => string

type CataloguePage = { items: CatalogueItem[]; total: number; limit: number; offset: number; next_cursor: string | null }

/**
 * The filter of a search (with its `sort`) or of clusters (which take none, as any other
 * parameter they do not take), its ranges checked. Bad filter parameters are one 422 naming
 * each (filterErrors).
 */
function filterOf(query: CatalogueQuery | ClustersQuery, sort?: CatalogueSort, moreErrors: FieldError[] = []): CatalogueFilter {
  // Every problem at once: the filters' and those of the operation's own parameters.
  const errors = [...filterErrors(query, ['query'], sort), ...moreErrors]
  if (errors.length > 0) throw ApiError.validation(errors)
  const geo = geoOf(query)
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

/** A mean coordinate from the sum of `count` coordinates in millionths of a degree, to the stored precision (numeric(9,6)). */
const meanOf = (microdegreesSum: number, count: number) => Math.round(microdegreesSum / count) / 1e6

/** Serialises a value once, with its ETag (a SHA-1 of the bytes), to be kept for `cityId`. */
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

  /**
   * A page of a search with its total, newest first unless `sort` says otherwise: at `offset`,
   * or after the listing `cursor` ends on (catalogue-cursor.ts). Either way `next_cursor` is
   * the page after, or null on the last page; the page reads one row more than it shows to know.
   */
  async search(query: CatalogueQuery, serialize: Serialize): Promise<CatalogueAnswer> {
    const { limit, offset, cursor, sort = 'created_desc' } = query
    refuseOffsetWithCursor(cursor, offset)
    const filter = filterOf(query, sort)
    const position = cursor === undefined ? undefined : positionOf(cursor, sort, filter)
    const snapshot = await this.versions.current()
    const totalOf = (search: CatalogueFilter) => this.total(search, snapshot)
    return this.cache.get(`list:${sort}:${limit}:${offset}:${cursor ?? ''}:${JSON.stringify(Object.values(filter))}`, snapshot, async () => {
      const index = () => this.matchesIndexOf(filter, snapshot)
      // How a page with bounds (a price range newest first, an area) is read depends on how many listings they keep.
      const counts: PageCounts | undefined = pageNeedsCounts(filter, sort)
        ? await Promise.all([totalOf(filter), totalOf(withoutBounds(filter, sort))]).then(([matches, unbounded]) => ({ matches, withoutBounds: unbounded }))
        : undefined
      const [total, read] = await Promise.all([
        counts?.matches ?? totalOf(filter),
        position ? this.readPageAfter(filter, sort, limit + 1, position, counts, index) : this.readPage(filter, sort, limit + 1, offset, counts, index),
      ])
      const rows = read.slice(0, limit)
      await this.names.ensure(placesOf(rows))
      const items = rows.map((row) => toCatalogueItem(row, this.names, this.mediaBase))
      const next_cursor = read.length > limit ? cursorAfter(sort, filter, rows.at(-1)!) : null
      return answerOf(serialize, { items, total, limit, offset, next_cursor }, filter.cityId)
    })
  }

  /**
   * The matches in a map's box grouped on the grid of its zoom (geo.ts cellDegrees): one
   * cluster per cell with listings, counted exactly, at its listings' mean position with the
   * box that holds them. Kept like a search's answers.
   */
  async clusters(query: ClustersQuery, serialize: Serialize): Promise<CatalogueAnswer> {
    const boxProblems = clusterBoxProblems(query.bbox, query.zoom).map(({ parameter, message }) => ({ loc: ['query', parameter], msg: message }))
    const filter = filterOf(query, undefined, boxProblems)
    const snapshot = await this.versions.current()
    return this.cache.get(`clusters:${query.zoom}:${JSON.stringify(Object.values(filter))}`, snapshot, async () => {
      const rows = await repository.readClusters(this.db, filter, query.zoom, cellDegrees(query.zoom), () => this.matchesIndexOf(filter, snapshot))
      let total = 0
      const clusters = rows.map((row) => {
        total += row.count
        const [lat, lon] = [meanOf(row.latitudeSum, row.count), meanOf(row.longitudeSum, row.count)]
        return { lat, lon, count: row.count, bbox: [row.west, row.south, row.east, row.north] }
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

  /**
   * A search's exact total, kept apart from its pages (its other pages and orders share it);
   * a box with a price range counted listing by listing on the index matchesIndexOf chooses.
   */
  private total(search: CatalogueFilter, snapshot: CatalogueSnapshot): Promise<number> {
    return this.cache.get(`total:${JSON.stringify(Object.values(search))}`, snapshot, async () => ({
      value: await repository.countCatalogue(this.db, search, () => this.matchesIndexOf(search, snapshot)),
      bytes: 8,
      cityId: search.cityId,
    }))
  }

  /**
   * For a search with a box and a price range, the index that finds its matches with fewer
   * entries read (MatchesIndex): both sides counted on the counts tables, and kept like totals.
   * The box is weighed only as far as it could still weigh less than the range.
   */
  private async matchesIndexOf(filter: CatalogueFilter, snapshot: CatalogueSnapshot): Promise<MatchesIndex | undefined> {
    if (!needsMatchesIndex(filter)) return undefined
    const box = { west: filter.west!, south: filter.south!, east: filter.east!, north: filter.north! }
    const inPriceRange = await this.total(priceIndexedPart(filter), snapshot)
    const rows = inPriceRange + 1
    const aroundBox = await this.cache.get(`around-box:${rows}:${JSON.stringify(Object.values(box))}`, snapshot, async () => ({
      value: await repository.countListingsAroundBox(this.db, box, rows),
      bytes: 8,
      cityId: undefined,
    }))
    return matchesIndexFor(aroundBox, inPriceRange)
  }

  /** Reads a page by its plan; a walk that falls short of the page is read again as a range. */
  private async readPage(
    filter: CatalogueFilter,
    sort: CatalogueSort,
    limit: number,
    offset: number,
    counts?: PageCounts,
    index?: repository.ChooseMatchesIndex,
  ) {
    if (counts && expectedRows(limit, offset, counts) === 0) return []
    const plan = planPage(filter, sort, offset + limit, counts)
    const rows = await repository.readPage(this.db, filter, sort, limit, offset, plan, undefined, index)
    if (counts && plan.kind === 'walk' && rows.length < expectedRows(limit, offset, counts)) {
      return repository.readPage(this.db, filter, sort, limit, offset, { kind: 'range' }, undefined, index)
    }
    return rows
  }

  /**
   * Reads the page after a position: a keyset read of each part of the sort's order in turn
   * until the page is full (catalogue-cursor.ts), each planned as a first page (its end is
   * `limit`, whatever the depth). A walk that falls short cannot tell the end of the matches
   * from a walk too shallow, so it is read again as a range: the last page of a price range,
   * newest first, reads the range after the cursor once.
   */
  private async readPageAfter(
    filter: CatalogueFilter,
    sort: CatalogueSort,
    limit: number,
    position: Keyset,
    counts?: PageCounts,
    index?: repository.ChooseMatchesIndex,
  ) {
    const rows: repository.PageRow[] = []
    for (const after of keysetsAfter(sort, filter, position)) {
      const wanted = limit - rows.length
      const plan = planPage(filter, sort, wanted, counts)
      let read = await repository.readPage(this.db, filter, sort, wanted, 0, plan, after, index)
      if (plan.kind === 'walk' && read.length < wanted) read = await repository.readPage(this.db, filter, sort, wanted, 0, { kind: 'range' }, after, index)
      rows.push(...read)
      if (rows.length === limit) break
    }
    return rows
  }
}
