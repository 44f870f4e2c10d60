/**
 * The catalogue's SQL: pages, totals and single listings, read from the published rows of
 * properties and the counts tables the database keeps (migrations 0002, 0008, 0009). Every
 * statement is prepared once per connection (prepared.ts) and stands alone, so it may run
 * pipelined. Which page statement serves a search is decided in catalogue-page-plan.ts.
 */
import { and, asc, desc, eq, gte, lte, sql, type AnyColumn, type SQL } from 'drizzle-orm'
import type { PipelinedDatabase } from '../../db/client.js'
import { prepared } from '../../db/prepared.js'
import {
  catalogueCounts,
  catalogueCountsByCell,
  catalogueCountsByCellPrice,
  catalogueCountsByCity,
  catalogueCountsByDistrictPrice,
  catalogueCountsByPrice,
  catalogueCountsByPriceAllCities,
  dealTypes,
  properties,
  propertyTypes,
  type PropertyRow,
} from '../../db/schema.js'
import { timestampKeyFromUtc } from '../../lib/cursor.js'
import { offsetTimestampFromUtcText, toOffsetTimestamp } from '../../lib/time.js'
import { ListingStatus } from '../properties/listing-status.js'
import type { Keyset, SortedRow } from './catalogue-cursor.js'
import { boxRows, COUNTED_CELL_DEGREES, COUNTED_ZOOM, countedBoxOf, countedCellOf, EARTH_RADIUS_M, type CountedBox, type GeoBox } from './geo.js'
import {
  isBound,
  isGeoKey,
  isPriceBound,
  usedKeys,
  type CatalogueFilter,
  type CatalogueSort,
  type FilterKey,
  type MatchesIndex,
  type PagePlan,
} from './catalogue-page-plan.js'
import type { CatalogueDetail } from './catalogue.schemas.js'

/** The columns the map's conditions read, on the table or on a subquery of the same names. */
type Located = { latitude: SQL | SQL.Aliased | AnyColumn; longitude: SQL | SQL.Aliased | AnyColumn; price?: SQL | SQL.Aliased | AnyColumn }

/**
 * Metres from the point `near` (placeholders nearLat, nearLon): the haversine on the sphere,
 * as geo.ts's distanceMetres computes it.
 */
const distanceOf = (of: Located) => {
  const lat = sql`${of.latitude}::float8`
  const nearLat = sql`${sql.placeholder('nearLat')}::float8`
  return sql<number>`2 * ${EARTH_RADIUS_M}::float8 * asin(least(1, sqrt(
    power(sin(radians(${lat} - ${nearLat}) / 2), 2)
    + cos(radians(${nearLat})) * cos(radians(${lat})) * power(sin(radians(${of.longitude}::float8 - ${sql.placeholder('nearLon')}::float8) / 2), 2))))`
}

/**
 * The bounds a walk checks on the rows it read (see boundKeys), and the same conditions as
 * filters: the box's edges (a range of catalogue_geo_idx, migration 0021, whose keys are the
 * coordinates as float8: compared as such, about twice as fast as numeric; a stored
 * numeric(9,6) and the same decimal in the query are the same float8, so edges stay
 * inclusive), and the circle by distance within its box, to the millimetre.
 */
const boundConditions: Partial<Record<FilterKey, (of: Located) => SQL | undefined>> = {
  minPrice: (of) => sql`${of.price!} >= ${sql.placeholder('minPrice')}`,
  maxPrice: (of) => sql`${of.price!} <= ${sql.placeholder('maxPrice')}`,
  west: (of) => sql`${of.longitude}::float8 >= ${sql.placeholder('west')}::float8`,
  east: (of) => sql`${of.longitude}::float8 <= ${sql.placeholder('east')}::float8`,
  south: (of) => sql`${of.latitude}::float8 >= ${sql.placeholder('south')}::float8`,
  north: (of) => sql`${of.latitude}::float8 <= ${sql.placeholder('north')}::float8`,
  // To the millimetre, as geo.ts's isWithinRadius compares them.
  nearLat: (of) => sql`floor(${distanceOf(of)} * 1000 + 0.5) <= floor(${sql.placeholder('radiusM')}::float8 * 1000 + 0.5)`,
  nearLon: () => undefined,
  radiusM: () => undefined,
}

/**
 * The row of the map's counted grid (geo.ts COUNTED_ZOOM) a listing's latitude falls in: the
 * first key of catalogue_geo_idx, written as migration 0026 writes it, so the index serves it.
 */
const cellSide = sql.raw(String(COUNTED_CELL_DEGREES))
const latitudeRow = sql`floor(${properties.latitude}::float8 / ${cellSide})::int`
const longitudeColumn = sql`floor(${properties.longitude}::float8 / ${cellSide})::int`
const inLatitudeRows = (placeholder: string) => sql`${latitudeRow} = any(${sql.placeholder(placeholder)}::int[])`

/** Each filter as a condition on a placeholder of its own name. */
const filterConditions: Record<FilterKey, () => SQL | undefined> = {
  cityId: () => eq(properties.cityId, sql.placeholder('cityId')),
  propertyTypeId: () => eq(properties.propertyTypeId, sql.placeholder('propertyTypeId')),
  dealTypeId: () => eq(properties.dealTypeId, sql.placeholder('dealTypeId')),
  tenantId: () => eq(properties.tenantId, sql.placeholder('tenantId')),
  minPrice: () => gte(properties.price, sql.placeholder('minPrice')),
  maxPrice: () => lte(properties.price, sql.placeholder('maxPrice')),
  districtId: () => eq(properties.districtId, sql.placeholder('districtId')),
  residentialComplexId: () => eq(properties.residentialComplexId, sql.placeholder('residentialComplexId')),
  rooms: () => eq(properties.rooms, sql.placeholder('rooms')),
  minArea: () => gte(properties.area, sql.placeholder('minArea')),
  maxArea: () => lte(properties.area, sql.placeholder('maxArea')),
  west: () => boundConditions.west!(properties),
  east: () => boundConditions.east!(properties),
  // A box's rows of the grid (placeholder latitudeRows, see mapValues): catalogue_geo_idx reads
  // each row's longitudes in the box, not the whole band of its latitudes.
  south: () => and(inLatitudeRows('latitudeRows'), boundConditions.south!(properties)),
  north: () => boundConditions.north!(properties),
  nearLat: () => boundConditions.nearLat!(properties),
  nearLon: () => undefined,
  radiusM: () => undefined,
}

/** The values a box adds to its statements' placeholders: the rows of the grid it spans. */
function mapValues(filter: CatalogueFilter): { latitudeRows?: number[] } {
  return filter.south === undefined ? {} : { latitudeRows: boxRows(boxOf(filter)!) }
}

const boxOf = (filter: CatalogueFilter): GeoBox | undefined =>
  filter.south === undefined ? undefined : { west: filter.west!, south: filter.south, east: filter.east!, north: filter.north! }

/** Filters the map's counts table answers, besides the box. */
const cellFacetConditions: Partial<Record<FilterKey, () => SQL>> = {
  propertyTypeId: () => eq(catalogueCountsByCell.propertyTypeId, sql.placeholder('propertyTypeId')),
  dealTypeId: () => eq(catalogueCountsByCell.dealTypeId, sql.placeholder('dealTypeId')),
  rooms: () => eq(catalogueCountsByCell.rooms, sql.placeholder('rooms')),
}
const boxKeys = new Set<FilterKey>(['west', 'south', 'east', 'north'])

/** A search a map counts table can count: which table, and its box split for it. */
interface CountedSearch {
  source: 'cells' | 'cell-prices'
  box: CountedBox
}

/**
 * How a map counts table counts a search, if one can: a box (not a circle) with counted cells
 * wholly inside it, and besides it type, deal and rooms at most (catalogue_counts_by_cell) or a
 * price range with type and deal at most (catalogue_counts_by_cell_price).
 */
function countedSearchOf(filter: CatalogueFilter, keys: FilterKey[]): CountedSearch | undefined {
  if (!keys.some((key) => boxKeys.has(key))) return undefined
  const source = keys.every((key) => boxKeys.has(key) || (!isGeoKey(key) && cellFacetConditions[key]))
    ? 'cells'
    : keys.some(isPriceBound) && keys.every((key) => boxKeys.has(key) || isPriceBound(key) || key === 'propertyTypeId' || key === 'dealTypeId')
      ? 'cell-prices'
      : undefined
  const box = source && countedBoxOf(boxOf(filter)!)
  return source && box ? { source, box } : undefined
}

/** A counted box's values, as the placeholders of cellsInside and edgeParts. */
function countedBoxValues(counted: CountedBox) {
  return {
    ...counted,
    // The edge columns' longitudes as an index range, a little wider than the column (the
    // division rounds); the column itself is checked on each listing.
    westEdgeEnd: (counted.westColumn + 1) * COUNTED_CELL_DEGREES + 1e-9,
    eastEdgeStart: counted.eastColumn * COUNTED_CELL_DEGREES - 1e-9,
  }
}

/** The counted cells wholly inside a counted box, of the search's type, deal and rooms. */
const cellsInside = (keys: FilterKey[]) =>
  and(
    sql`${catalogueCountsByCell.cellRow} = any(${sql.placeholder('innerRows')}::int[])`,
    gte(catalogueCountsByCell.cellColumn, sql.placeholder('firstInnerColumn')),
    lte(catalogueCountsByCell.cellColumn, sql.placeholder('lastInnerColumn')),
    ...keys.filter((key) => cellFacetConditions[key]).map((key) => cellFacetConditions[key]!()),
  )!

/**
 * The published listings of a counted box's edge, matching the search, as three disjoint
 * conditions, each one range per row of catalogue_geo_idx: the rows its south and north edges
 * cross (within the box), and in the rows between, its west and east edge columns.
 */
function edgeParts(keys: FilterKey[]): SQL[] {
  // A price range is checked on each listing: the edge is found on catalogue_geo_idx.
  const facets = keys.filter((key) => !isGeoKey(key)).map((key) => conditionOf(key, 'box'))
  // In the rows between the edges, the listings of one edge column: an index range on the
  // longitudes from `first` to `last` placeholders, the column checked on each.
  const edgeColumn = (first: string, last: string, column: string) =>
    and(
      isPublished,
      inLatitudeRows('innerRows'),
      sql`${properties.longitude}::float8 between ${sql.placeholder(first)}::float8 and ${sql.placeholder(last)}::float8`,
      sql`${longitudeColumn} = ${sql.placeholder(column)}::int`,
      ...facets,
    )!
  return [
    and(isPublished, inLatitudeRows('edgeRows'), ...keys.filter(isGeoKey).map((key) => boundConditions[key]!(properties)), ...facets)!,
    edgeColumn('west', 'westEdgeEnd', 'westColumn'),
    edgeColumn('eastEdgeStart', 'east', 'eastColumn'),
  ]
}

/** A price range's ends, both always given to the statements of a counted priced box (see NO_MAX_PRICE). */
const priceRangeValues = (filter: CatalogueFilter) => ({ minPrice: filter.minPrice ?? 0, maxPrice: filter.maxPrice ?? NO_MAX_PRICE })

/**
 * The rows of catalogue_counts_by_cell_price in the cells wholly inside a counted box, of the
 * search's type and deal, in the price bands strictly between those of the range's ends: all of
 * their listings match.
 */
const cellPricesInside = (keys: FilterKey[]) =>
  and(
    // Without a type or deal, every one of them: one range of the key each.
    keys.includes('propertyTypeId')
      ? eq(catalogueCountsByCellPrice.propertyTypeId, sql.placeholder('propertyTypeId'))
      : sql`${catalogueCountsByCellPrice.propertyTypeId} = any(array(select ${propertyTypes.id} from ${propertyTypes}))`,
    keys.includes('dealTypeId')
      ? eq(catalogueCountsByCellPrice.dealTypeId, sql.placeholder('dealTypeId'))
      : sql`${catalogueCountsByCellPrice.dealTypeId} = any(array(select ${dealTypes.id} from ${dealTypes}))`,
    sql`${catalogueCountsByCellPrice.cellRow} = any(${sql.placeholder('innerRows')}::int[])`,
    gte(catalogueCountsByCellPrice.cellColumn, sql.placeholder('firstInnerColumn')),
    lte(catalogueCountsByCellPrice.cellColumn, sql.placeholder('lastInnerColumn')),
    sql`${catalogueCountsByCellPrice.priceBand} > catalogue_price_band(${sql.placeholder('minPrice')})`,
    sql`${catalogueCountsByCellPrice.priceBand} < catalogue_price_band(${sql.placeholder('maxPrice')})`,
  )!

/**
 * The matching listings of the same cells in the range's end bands, as two conditions, one per
 * band, each a range of a price index (the band of min_price from min_price, the band of
 * max_price up to max_price; one band: the first is the whole range and the second is empty),
 * with the cells checked on each listing. The cells' rows are compared as `row + 0`, which
 * catalogue_geo_idx does not hold: the price index finds these, a few hundred entries of a band
 * where the box holds hundreds of thousands.
 */
function endBandParts(keys: FilterKey[]): SQL[] {
  const min = sql.placeholder('minPrice')
  const max = sql.placeholder('maxPrice')
  const price = properties.price
  const inInnerCells = and(
    isPublished,
    ...keys.filter((key) => key === 'propertyTypeId' || key === 'dealTypeId').map((key) => filterConditions[key]()),
    sql`${latitudeRow} + 0 = any(${sql.placeholder('innerRows')}::int[])`,
    sql`${longitudeColumn} between ${sql.placeholder('firstInnerColumn')}::int and ${sql.placeholder('lastInnerColumn')}::int`,
  )
  return [
    and(inInnerCells, sql`${price} >= ${min}`, sql`${price} <= ${max}`, sql`${price} < catalogue_price_band_end(${min})`)!,
    and(inInnerCells, sql`${price} >= greatest(catalogue_price_band_start(${max}), catalogue_price_band_end(${min}))`, sql`${price} <= ${max}`)!,
  ]
}

/**
 * Chooses, when a statement must read a box with a price range listing by listing, which index
 * finds them (MatchesIndex); undefined when the search has no such pair. Called only then, as
 * choosing reads counts of its own.
 */
export type ChooseMatchesIndex = () => Promise<MatchesIndex | undefined>

/** Filters the coarse counts table answers. */
const cityFacetConditions: Partial<Record<FilterKey, () => SQL>> = {
  cityId: () => eq(catalogueCountsByCity.cityId, sql.placeholder('cityId')),
  propertyTypeId: () => eq(catalogueCountsByCity.propertyTypeId, sql.placeholder('propertyTypeId')),
  dealTypeId: () => eq(catalogueCountsByCity.dealTypeId, sql.placeholder('dealTypeId')),
}

/** Filters the detailed counts table answers: its key columns. */
const facetConditions: Partial<Record<FilterKey, () => SQL>> = {
  cityId: () => eq(catalogueCounts.cityId, sql.placeholder('cityId')),
  propertyTypeId: () => eq(catalogueCounts.propertyTypeId, sql.placeholder('propertyTypeId')),
  dealTypeId: () => eq(catalogueCounts.dealTypeId, sql.placeholder('dealTypeId')),
  districtId: () => eq(catalogueCounts.districtId, sql.placeholder('districtId')),
  rooms: () => eq(catalogueCounts.rooms, sql.placeholder('rooms')),
}

/** Filters the price-band counts tables answer, besides the price range itself (a district: its own table). */
const priceBandKeys = new Set<FilterKey>(['cityId', 'propertyTypeId', 'dealTypeId', 'rooms', 'districtId'])
/** Past any price numeric(15,2) holds: an open end of a price range. */
const NO_MAX_PRICE = 1e15

/** Each sort's order, on the table's columns or on a subquery's of the same names. */
type Ordered = { createdAt: SQL.Aliased | AnyColumn; price: SQL.Aliased | AnyColumn; id: SQL.Aliased | AnyColumn; distance?: SQL.Aliased }
const orderings = {
  created_desc: (of: Ordered = properties) => [desc(of.createdAt), desc(of.id)],
  price_asc: (of: Ordered = properties) => [asc(of.price), asc(of.id)],
  price_desc: (of: Ordered = properties) => [desc(of.price), desc(of.id)],
  // On the subquery's distance column: every plan of sort=distance is a range over one.
  distance: (of: Ordered = properties) => [asc(of.distance ?? distanceOf(properties)), asc(of.id)],
} as const satisfies Record<CatalogueSort, unknown>

/**
 * "Published" is a literal in every catalogue statement: the statements are planned once for
 * any values (a generic plan: on PostgreSQL the pipelined connections plan nothing else, see
 * db/client.ts), and such a plan can use the partial indexes, which hold status 2 only, only
 * if the status is written into the statement. Planning costs as much as running one (~0.3 ms).
 */
const isPublished = sql`${properties.statusId} = ${sql.raw(String(ListingStatus.Published))}`

/**
 * A filter's condition where `index` says which index finds the matches of a box and a price
 * range (MatchesIndex): the other is written so that no index serves it. For `box`, the price
 * is compared as `price + 0`, an expression no index holds; for `price`, the box goes without
 * its rows of the grid, which catalogue_geo_idx is keyed by first (its edges still hold every
 * match to it).
 */
function conditionOf(key: FilterKey, index: MatchesIndex | undefined): SQL | undefined {
  if (index === 'box' && isPriceBound(key)) return boundConditions[key]!({ ...properties, price: sql`(${properties.price} + 0)` })
  if (index === 'price' && key === 'south') return boundConditions.south!(properties)
  return filterConditions[key]()
}

/**
 * The published rows matching the filters, and after a page's key when it is read by cursor;
 * with a box and a price range, found on the index `index` names.
 */
function publishedWhere(keys: FilterKey[], after?: SQL, index?: MatchesIndex): SQL {
  return and(isPublished, ...keys.map((key) => conditionOf(key, index)), after)!
}

/**
 * Where a page by cursor starts (catalogue-cursor.ts): the rows after a key in the sort's order,
 * as a row comparison on the columns the covering indexes end in, so the page is one index range
 * scan from the key, whatever its depth. The values are parameters of their own, cast to the
 * columns' types so that each statement is one generic plan.
 */
const afterId = sql`${sql.placeholder('afterId')}::int`
const keysetConditions: Record<Keyset['part'], (direction: '<' | '>') => SQL> = {
  created: (direction) =>
    sql`(${properties.createdAt}, ${properties.id}) ${sql.raw(direction)} (${sql.placeholder('afterCreatedAt')}::timestamptz, ${afterId})`,
  priced: (direction) => sql`(${properties.price}, ${properties.id}) ${sql.raw(direction)} (${sql.placeholder('afterPrice')}::numeric, ${afterId})`,
  unpriced: (direction) => sql`${properties.price} is null and ${properties.id} ${sql.raw(direction)} ${afterId}`,
  // The last row's distance computed from its coordinates by the same expression as every
  // row's, so the comparison is exact (numeric(9,6) to float8, as the columns are read).
  distance: (direction) =>
    sql`(${distanceOf(properties)}, ${properties.id}) ${sql.raw(direction)} (${distanceOf({
      latitude: sql`${sql.placeholder('afterLat')}::numeric(9,6)`,
      longitude: sql`${sql.placeholder('afterLon')}::numeric(9,6)`,
    })}, ${afterId})`,
}
/** Which way "after" goes in each sort. */
const afterDirections = { created_desc: '<', price_asc: '>', price_desc: '<', distance: '>' } as const satisfies Record<CatalogueSort, '<' | '>'>
const keysetCondition = (sort: CatalogueSort, part: Keyset['part'] | undefined) => part && keysetConditions[part](afterDirections[sort])

/**
 * The small rendition of a listing's first photo, in the listing's own row of the result: one
 * probe on property_images_property_order_idx per listing, no query per row. `source` names the
 * table or subquery the listing comes from: Drizzle leaves a one-source select's columns
 * unqualified, and a bare "id" inside this subquery would be the image's.
 */
const firstThumbnailOf = (source: 'properties' | 'page') =>
  sql<
    string | null
  >`(select pi.thumbnail_key from property_images pi where pi.property_id = ${sql.identifier(source)}."id" order by pi.sort_order, pi.id limit 1)`

const itemColumns = {
  id: properties.id,
  propertyTypeId: properties.propertyTypeId,
  dealTypeId: properties.dealTypeId,
  cityId: properties.cityId,
  districtId: properties.districtId,
  complexId: properties.residentialComplexId,
  price: properties.price,
  area: properties.area,
  rooms: properties.rooms,
  floor: properties.floor,
  totalFloors: properties.totalFloors,
  createdAt: properties.createdAt,
  latitude: properties.latitude,
  longitude: properties.longitude,
  thumbnailKey: firstThumbnailOf('properties'),
}

/** A listing as the catalogue shows it, its references still ids (see catalogue.mapper.ts). */
export interface ItemRow {
  id: number
  propertyTypeId: number
  dealTypeId: number
  cityId: number | null
  districtId: number | null
  complexId: number | null
  price: number | null
  area: number | null
  rooms: number | null
  floor: number | null
  totalFloors: number | null
  latitude: number | null
  longitude: number | null
  /** As the API shows it, with a numeric offset. */
  createdAt: string
  thumbnailKey: string | null
}

/** An ItemRow as Drizzle reads itemColumns, the time as a Date. */
type StoredItemRow = Omit<ItemRow, 'createdAt'> & { createdAt: Date }
const asItemRow = (row: StoredItemRow): ItemRow => ({ ...row, createdAt: toOffsetTimestamp(row.createdAt) })

/** A LIMIT or OFFSET Drizzle writes as it is, not as a parameter (see windowFor in catalogue-page-plan.ts). */
const literal = (rows: number) => sql.raw(String(rows)) as unknown as number

/**
 * A page as the page query sends it: one array per column of ItemRow, each in the page's order,
 * the time in UTC. An empty page is a null for every column (array_agg of no rows).
 */
type PageColumns = [
  ids: number[] | null,
  propertyTypeIds: number[],
  dealTypeIds: number[],
  cityIds: (number | null)[],
  districtIds: (number | null)[],
  complexIds: (number | null)[],
  prices: (number | null)[],
  areas: (number | null)[],
  rooms: (number | null)[],
  floors: (number | null)[],
  totalFloors: (number | null)[],
  createdAtsUtc: string[],
  thumbnailKeys: (string | null)[],
  latitudes: (number | null)[],
  longitudes: (number | null)[],
]

/**
 * One page of the catalogue as `plan` says to read it: one index-only scan of a covering index
 * (see schema.ts) finds the page's rows and carries their columns; only then, for those rows
 * alone, the first photo. So a deep offset skips index entries, never table rows, and pays for
 * no thumbnail it drops.
 */
export async function readPage(
  db: PipelinedDatabase,
  filter: CatalogueFilter,
  sort: CatalogueSort,
  limit: number,
  offset: number,
  plan: PagePlan,
  after?: Keyset,
  chooseIndex?: ChooseMatchesIndex,
): Promise<PageRow[]> {
  const keys = usedKeys(filter)
  // Only a range reads the matches of both a box and a price range (a walk checks one of them on the rows it walks).
  const index = plan.kind === 'range' ? await chooseIndex?.() : undefined
  const size = plan.kind === 'window' ? plan.window : plan.kind === 'walk' ? plan.depth : ''
  const shape = `page:${sort}:${plan.kind}${size}:${keys.join(',')}:${after?.part ?? ''}:${index ?? ''}`
  const statement = prepared<{ columns: PageColumns }[]>(db, shape, (name) => {
    const page = pageQuery(db, keys, sort, plan, keysetCondition(sort, after?.part), index)
      .limit(sql.placeholder('limit'))
      .offset(sql.placeholder('offset'))
      .as('page')
    const columns = [
      page.id,
      page.propertyTypeId,
      page.dealTypeId,
      page.cityId,
      page.districtId,
      page.complexId,
      page.price,
      page.area,
      page.rooms,
      page.floor,
      page.totalFloors,
      // As JSON text, which costs PostgreSQL less than arithmetic on the epoch, and Node less than a Date.
      sql`${page.createdAt} at time zone 'UTC'`,
      firstThumbnailOf('page'),
      page.latitude,
      page.longitude,
    ]
    // One JSON array per column, which the driver parses natively: mapping 50 rows of 13 columns
    // one value at a time was the largest cost of a page here, and a JSON array per row made
    // PostgreSQL look up every value's type again on every row (a third of the statement). The
    // aggregates take the rows in the order the subquery sorted them. The manual (4.2.7) says a
    // sorted subquery "will usually work" and names what breaks it: processing above the
    // subquery, such as a join. Here the aggregate sits directly on the subquery's LIMIT in
    // every plan (window, walk, range; EXPLAIN on PostgreSQL 15), and the catalogue tests of
    // order fail if a column comes out of order. One ORDER BY per aggregate would sort the page
    // 13 times (docs/performance.md#page-plans).
    const arrays = sql.join(
      columns.map((column) => sql`array_agg(${column})`),
      sql`, `,
    )
    return db
      .select({ columns: sql<PageColumns>`json_build_array(${arrays})` })
      .from(page)
      .prepare(name)
  })
  const [{ columns }] = (await statement.execute({ ...filter, ...mapValues(filter), ...keyValues(after), limit, offset })) as [{ columns: PageColumns }]
  const [
    ids,
    propertyTypeIds,
    dealTypeIds,
    cityIds,
    districtIds,
    complexIds,
    prices,
    areas,
    rooms,
    floors,
    totalFloors,
    createdAtsUtc,
    thumbnailKeys,
    latitudes,
    longitudes,
  ] = columns
  if (ids === null) return []
  return ids.map((id, row) => ({
    id,
    propertyTypeId: propertyTypeIds[row]!,
    dealTypeId: dealTypeIds[row]!,
    cityId: cityIds[row] ?? null,
    districtId: districtIds[row] ?? null,
    complexId: complexIds[row] ?? null,
    price: prices[row] ?? null,
    area: areas[row] ?? null,
    rooms: rooms[row] ?? null,
    floor: floors[row] ?? null,
    totalFloors: totalFloors[row] ?? null,
    createdAt: offsetTimestampFromUtcText(createdAtsUtc[row]!),
    createdAtKey: timestampKeyFromUtc(createdAtsUtc[row]!),
    latitude: latitudes[row] ?? null,
    longitude: longitudes[row] ?? null,
    thumbnailKey: thumbnailKeys[row] ?? null,
  }))
}

/** A row of a page, with its place in the sort to make the page's cursor from. */
export type PageRow = ItemRow & SortedRow

/** A keyset's values, as the placeholders of its condition. */
function keyValues(after: Keyset | undefined) {
  switch (after?.part) {
    case undefined:
      return {}
    case 'created':
      return { afterCreatedAt: after.createdAt, afterId: after.id }
    case 'priced':
      return { afterPrice: after.price, afterId: after.id }
    case 'unpriced':
      return { afterId: after.id }
    case 'distance':
      return { afterLat: after.latitude, afterLon: after.longitude, afterId: after.id }
  }
}

/**
 * The matches a page is cut from, in the page's order, as PagePlan says to read them; by
 * cursor, only those after its key (`after`), which every plan checks first in the index; a
 * box and a price range on the index `index` names.
 */
function pageQuery(db: PipelinedDatabase, keys: FilterKey[], sort: CatalogueSort, plan: PagePlan, after: SQL | undefined, index: MatchesIndex | undefined) {
  // Every covering index carries the coordinates (migration 0022): the page's rows are read from the index alone.
  const { thumbnailKey: _thumbnail, ...indexedColumns } = itemColumns
  const distance = sort === 'distance' ? { distance: distanceOf(properties).as('distance') } : {}
  // Typed as the indexed columns: the distance is read by name (Ordered) where present.
  const selection = { ...indexedColumns, ...distance } as typeof indexedColumns
  const matching = (filterKeys: FilterKey[]) =>
    db
      .select(selection)
      .from(properties)
      .where(publishedWhere(filterKeys, after, index))
  switch (plan.kind) {
    case 'window': {
      const first = matching(keys)
        .orderBy(...orderings[sort]())
        .limit(literal(plan.window))
        .as('first')
      return db
        .select()
        .from(first)
        .orderBy(...orderings[sort](first))
    }
    case 'walk': {
      const walked = matching(keys.filter((key) => !isBound(key, sort)))
        .orderBy(...orderings[sort]())
        .limit(literal(plan.depth))
        .as('walked')
      const of = walked as unknown as Located
      return db
        .select()
        .from(walked)
        .where(and(...keys.filter((key) => isBound(key, sort)).map((key) => boundConditions[key]!(of))))
        .orderBy(...orderings[sort](walked))
    }
    case 'range': {
      const all = matching(keys).offset(literal(0)).as('all_matches')
      return db
        .select()
        .from(all)
        .orderBy(...orderings[sort](all))
    }
  }
}

/**
 * The exact number of published listings matching the filter, without counting the catalogue
 * (trigger-kept tables, migrations 0002, 0008 and 0009):
 * - city, type and deal (the landing page and most searches): a sum over catalogue_counts_by_city;
 * - with district or rooms: a sum over catalogue_counts;
 * - a price range with city, district, type, deal or rooms: a sum over the price bands wholly
 *   inside the range in catalogue_counts_by_price (with a district:
 *   catalogue_counts_by_district_price; without either: catalogue_counts_by_price_all_cities),
 *   plus a count, on the price indexes, of the listings in the two bands at its ends (a few
 *   hundred index entries where the whole range was ~13,000 for a Moscow flat budget among
 *   1M listings);
 * - a box on the map with type, deal and rooms at most: a sum over the cells of
 *   catalogue_counts_by_cell wholly inside the box, plus a count of the listings on its edge
 *   (geo.ts CountedBox) on catalogue_geo_idx;
 * - a box with a price range, type and deal at most: a sum over the same cells' price bands
 *   strictly inside the range in catalogue_counts_by_cell_price, plus a count of the cells'
 *   listings in the range's two end bands on a price index, and of the edge's listings;
 * - anything else (area, complex, agency, rooms with a price range) is counted on the catalogue
 *   indexes (see schema.ts); a box with a price range on the index `chooseIndex` chooses.
 */
export async function countCatalogue(db: PipelinedDatabase, filter: CatalogueFilter, chooseIndex?: ChooseMatchesIndex): Promise<number> {
  const keys = usedKeys(filter)
  const counted = countedSearchOf(filter, keys)
  const source = counted
    ? counted.source
    : keys.every((key) => cityFacetConditions[key])
      ? 'city-facets'
      : keys.every((key) => facetConditions[key])
        ? 'facets'
        : keys.some(isPriceBound) && keys.every((key) => isPriceBound(key) || priceBandKeys.has(key))
          ? 'price-bands'
          : 'rows'
  const index = source === 'rows' ? await chooseIndex?.() : undefined
  const statement = prepared<{ total: number }[]>(db, `count:${source}:${keys.join(',')}:${index ?? ''}`, (name) => {
    const countOf = (where: SQL) =>
      sql`(${db
        .select({ n: sql`count(*)` })
        .from(properties)
        .where(where)})`
    switch (source) {
      case 'cells':
        return db
          .select({ total: sql<number>`(coalesce(sum(${catalogueCountsByCell.listings}), 0) + ${sql.join(edgeParts(keys).map(countOf), sql` + `)})::int` })
          .from(catalogueCountsByCell)
          .where(cellsInside(keys))
          .prepare(name)
      case 'cell-prices': {
        const parts = [...endBandParts(keys), ...edgeParts(keys)].map(countOf)
        return db
          .select({ total: sql<number>`(coalesce(sum(${catalogueCountsByCellPrice.listings}), 0) + ${sql.join(parts, sql` + `)})::int` })
          .from(catalogueCountsByCellPrice)
          .where(cellPricesInside(keys))
          .prepare(name)
      }
      case 'city-facets':
        return db
          .select({ total: sql<number>`coalesce(sum(${catalogueCountsByCity.listings}), 0)::int` })
          .from(catalogueCountsByCity)
          .where(and(...keys.map((key) => cityFacetConditions[key]!())))
          .prepare(name)
      case 'facets':
        return db
          .select({ total: sql<number>`coalesce(sum(${catalogueCounts.listings}), 0)::int` })
          .from(catalogueCounts)
          .where(and(...keys.map((key) => facetConditions[key]!())))
          .prepare(name)
      case 'price-bands':
        return countByPriceBands(
          db,
          keys.filter((key) => !isPriceBound(key)),
        ).prepare(name)
      case 'rows':
        return db
          .select({ total: sql<number>`count(*)::int` })
          .from(properties)
          .where(publishedWhere(keys, undefined, index))
          .prepare(name)
    }
  })
  const bounds = source === 'price-bands' || source === 'cell-prices' ? priceRangeValues(filter) : {}
  const [row] = await statement.execute({ ...filter, ...bounds, ...mapValues(filter), ...(counted && countedBoxValues(counted.box)) })
  return row?.total ?? 0
}

/**
 * A price range [min, max] is three disjoint parts: from min to the end of min's band, the
 * bands strictly between min's and max's (summed from the counts table: a district's bands,
 * the city's, or without either the all-cities ones), and from the start of max's band to max.
 * When both are in one band the first part is the whole range and the others are empty. The
 * bands are one range scan of the counts table's range indexes (with a type, migration 0011's;
 * without, 0009's; a district's, its primary key).
 *
 * The end parts are counted on the *_price_idx indexes, and cost what they count, which grows
 * with the catalogue. So each end part counts the smaller side of its band: where min sits in
 * the lower half of its band (and the range goes on past it), the listings of the band below
 * min are counted and taken from the band's total; likewise above max in max's band. At most
 * half a band is counted at either end, a quarter on average. Each CASE branch is a subquery
 * PostgreSQL runs only when the branch is taken. The conditions are subqueries too, which the
 * planner cannot fold for a given range: folded, a plan for the values left one branch and
 * looked so much cheaper than the plan for any values that PostgreSQL planned every execution
 * (0.35 ms of a 0.55 ms total).
 */
function countByPriceBands(db: PipelinedDatabase, groupKeys: FilterKey[]) {
  const min = sql.placeholder('minPrice')
  const max = sql.placeholder('maxPrice')
  const count = (condition: SQL) =>
    db
      .select({ n: sql`count(*)` })
      .from(properties)
      .where(and(publishedWhere(groupKeys), condition))
  const bands = groupKeys.includes('districtId')
    ? catalogueCountsByDistrictPrice
    : groupKeys.includes('cityId')
      ? catalogueCountsByPrice
      : catalogueCountsByPriceAllCities
  const bandColumns: Partial<Record<FilterKey, AnyColumn>> = {
    districtId: catalogueCountsByDistrictPrice.districtId,
    cityId: bands === catalogueCountsByDistrictPrice ? catalogueCountsByDistrictPrice.cityId : catalogueCountsByPrice.cityId,
    propertyTypeId: bands.propertyTypeId,
    dealTypeId: bands.dealTypeId,
    rooms: bands.rooms,
  }
  const ofGroup = groupKeys.map((key) => eq(bandColumns[key]!, sql.placeholder(key)))
  const bandTotal = (price: typeof min | typeof max) =>
    db
      .select({ n: sql`coalesce(sum(${bands.listings}), 0)` })
      .from(bands)
      .where(and(...ofGroup, sql`${bands.priceBand} = catalogue_price_band(${price})`))
  const price = properties.price
  const minBandStart = sql`catalogue_price_band_start(${min})`
  const minBandEnd = sql`catalogue_price_band_end(${min})`
  const maxBandStart = sql`catalogue_price_band_start(${max})`
  const maxBandEnd = sql`catalogue_price_band_end(${max})`
  const firstPart = sql`case
    when (select ${max} >= ${minBandEnd} and ${min} - ${minBandStart} < ${minBandEnd} - ${min})
    then (${bandTotal(min)}) - (${count(sql`${price} >= ${minBandStart} and ${price} < ${min}`)})
    else (${count(sql`${price} >= ${min} and ${price} <= ${max} and ${price} < ${minBandEnd}`)})
  end`
  const lastPart = sql`case
    when (select ${maxBandStart} < ${minBandEnd}) then 0
    when (select ${maxBandEnd} - ${max} < ${max} - ${maxBandStart})
    then (${bandTotal(max)}) - (${count(sql`${price} > ${max} and ${price} < ${maxBandEnd}`)})
    else (${count(sql`${price} >= ${maxBandStart} and ${price} <= ${max}`)})
  end`
  return db
    .select({ total: sql<number>`(coalesce(sum(${bands.listings}), 0) + ${firstPart} + ${lastPart})::int` })
    .from(bands)
    .where(and(...ofGroup, sql`${bands.priceBand} > catalogue_price_band(${min})`, sql`${bands.priceBand} < catalogue_price_band(${max})`))
}

/**
 * The published listings, of every kind, in the counted cells a box touches: about what
 * catalogue_geo_idx reads to find the box's matches (MatchesIndex), from
 * catalogue_counts_by_cell's primary key alone. At most `rows` of the cells' rows are summed:
 * each holds a listing at least, so a sum over all `rows` of them is already more than `rows`
 * listings, and a box over a whole country costs no more to weigh than `rows` index entries.
 */
export async function countListingsAroundBox(db: PipelinedDatabase, box: GeoBox, rows: number): Promise<number> {
  const statement = prepared<{ total: number }[]>(db, 'count:around-box', (name) => {
    const cells = db
      .select({ listings: catalogueCountsByCell.listings })
      .from(catalogueCountsByCell)
      .where(
        and(
          sql`${catalogueCountsByCell.cellRow} = any(${sql.placeholder('latitudeRows')}::int[])`,
          gte(catalogueCountsByCell.cellColumn, sql.placeholder('westColumn')),
          lte(catalogueCountsByCell.cellColumn, sql.placeholder('eastColumn')),
        ),
      )
      .limit(sql.placeholder('rows'))
      .as('cells')
    return db
      .select({ total: sql<number>`coalesce(sum(${cells.listings}), 0)::int` })
      .from(cells)
      .prepare(name)
  })
  const [row] = await statement.execute({ latitudeRows: boxRows(box), westColumn: countedCellOf(box.west), eastColumn: countedCellOf(box.east), rows })
  return row?.total ?? 0
}

/** A published listing's row with what its detail adds, or undefined. */
export interface DetailRow extends ItemRow {
  description: string | null
  attributes: CatalogueDetail['attributes']
  publishedAt: string
  imageKeys: string[]
}

export async function findPublishedListing(db: PipelinedDatabase, id: number): Promise<DetailRow | undefined> {
  const statement = prepared<
    (StoredItemRow & { description: string | null; attributes: CatalogueDetail['attributes']; publishedAt: Date | null; imageKeys: string[] })[]
  >(db, 'detail', (name) =>
    db
      .select({
        ...itemColumns,
        description: properties.description,
        attributes: properties.attributes,
        publishedAt: properties.publishedAt,
        imageKeys: sql<string[]>`array(select pi.file_key from property_images pi where pi.property_id = "properties"."id" order by pi.sort_order, pi.id)`,
      })
      .from(properties)
      .where(and(eq(properties.id, sql.placeholder('id')), isPublished))
      .prepare(name),
  )
  const [row] = await statement.execute({ id })
  return row && { ...row, createdAt: toOffsetTimestamp(row.createdAt), publishedAt: toOffsetTimestamp(row.publishedAt!) }
}

/** One listing's row whatever its status (the payload of `mls.new_listing`, written as it is published). */
export async function findListing(db: PipelinedDatabase, id: number): Promise<ItemRow | undefined> {
  const [row] = await db.select(itemColumns).from(properties).where(eq(properties.id, id))
  return row && asItemRow(row)
}

/** A published listing's row, whatever the catalogue shows of it (for the facts of its announcements). */
export async function findPublishedRow(db: PipelinedDatabase, id: number): Promise<PropertyRow | undefined> {
  const [row] = await db
    .select()
    .from(properties)
    .where(and(eq(properties.id, id), isPublished))
  return row
}

/**
 * One cell of a map's grid with matches: their number, the sums of their coordinates in
 * millionths of a degree (their mean, exactly, whichever way they were counted) and the box
 * that holds them.
 */
export interface ClusterRow {
  count: number
  latitudeSum: number
  longitudeSum: number
  west: number
  south: number
  east: number
  north: number
}

type ClusterColumns = [
  counts: number[] | null,
  latitudeSums: number[],
  longitudeSums: number[],
  wests: number[],
  souths: number[],
  easts: number[],
  norths: number[],
]

/**
 * A coordinate in millionths of a degree: the integer numeric(9,6) stores, as
 * catalogue_counts_by_cell sums it. Rounded from the float8 the statement reads anyway, which is
 * within a ten-millionth of it: numeric arithmetic costs several times as much.
 */
const microdegrees = (column: AnyColumn) => sql`round(${column}::float8 * 1000000)::bigint`

/**
 * The matches of `filter` (which has a box) grouped by the cell of the grid at `zoom` they fall
 * in, cells counted from 0° both ways, south-west first. As a page, one JSON array per column: a
 * city at a fine zoom is thousands of cells.
 *
 * At the counted zoom or coarser, with type, deal and rooms at most besides the box, the cells
 * wholly inside the box come from catalogue_counts_by_cell, each counted cell in the cell of
 * `zoom` its row and column shifted right by the zooms between (the grids are powers of two
 * apart, so this is the cell its listings fall in), and only the listings on the box's edge are
 * read; with a price range, type and deal at most, likewise from catalogue_counts_by_cell_price's
 * bands strictly inside the range, the listings of its end bands read too (as countCatalogue
 * counts them). Otherwise every match is read, on catalogue_geo_idx or, for a box with a price
 * range, the index `chooseIndex` chooses.
 */
export async function readClusters(
  db: PipelinedDatabase,
  filter: CatalogueFilter,
  zoom: number,
  cell: number,
  chooseIndex?: ChooseMatchesIndex,
): Promise<ClusterRow[]> {
  const keys = usedKeys(filter)
  const counted = zoom <= COUNTED_ZOOM ? countedSearchOf(filter, keys) : undefined
  const source = counted?.source ?? 'rows'
  const index = counted ? undefined : await chooseIndex?.()
  const statement = prepared<{ columns: ClusterColumns }[]>(db, `clusters:${source}:${keys.join(',')}:${index ?? ''}`, (name) => {
    const size = sql`${sql.placeholder('cell')}::float8`
    const listingsOf = (where: SQL) =>
      db
        .select({
          row: sql`floor(${properties.latitude}::float8 / ${size})::int`.as('row'),
          column: sql`floor(${properties.longitude}::float8 / ${size})::int`.as('column'),
          listings: sql`1`.as('listings'),
          latitudeSum: sql`${microdegrees(properties.latitude)}`.as('latitude_sum'),
          longitudeSum: sql`${microdegrees(properties.longitude)}`.as('longitude_sum'),
          south: sql`${properties.latitude}::float8`.as('south'),
          north: sql`${properties.latitude}::float8`.as('north'),
          west: sql`${properties.longitude}::float8`.as('west'),
          east: sql`${properties.longitude}::float8`.as('east'),
        })
        .from(properties)
        .where(where)
    const shift = sql`${sql.placeholder('shift')}::int`
    // A counted table's rows inside the box, each in the cell of `zoom` its cell falls in.
    const countedRows = (table: typeof catalogueCountsByCell | typeof catalogueCountsByCellPrice, where: SQL) =>
      db
        .select({
          row: sql`${table.cellRow} >> ${shift}`.as('row'),
          column: sql`${table.cellColumn} >> ${shift}`.as('column'),
          listings: table.listings,
          latitudeSum: table.latitudeSum,
          longitudeSum: table.longitudeSum,
          south: table.south,
          north: table.north,
          west: table.west,
          east: table.east,
        })
        .from(table)
        .where(where)
        .getSQL()
    const listed = (parts: SQL[]) => parts.map((part) => listingsOf(part).getSQL())
    const parts =
      source === 'cells'
        ? [countedRows(catalogueCountsByCell, cellsInside(keys)), ...listed(edgeParts(keys))]
        : source === 'cell-prices'
          ? [countedRows(catalogueCountsByCellPrice, cellPricesInside(keys)), ...listed([...endBandParts(keys), ...edgeParts(keys)])]
          : listed([publishedWhere(keys, undefined, index)])
    const cells = sql`(select "row", "column", sum(listings)::int as count, sum(latitude_sum) as latitude_sum, sum(longitude_sum) as longitude_sum,
        min(west) as west, min(south) as south, max(east) as east, max(north) as north
      from (${sql.join(parts, sql` union all `)}) as parts group by 1, 2 order by 1, 2) as cells`
    // The aggregates take the cells in the order the subquery sorted them (see readPage).
    const arrays = sql.join(
      ['count', 'latitude_sum', 'longitude_sum', 'west', 'south', 'east', 'north'].map((column) => sql`array_agg(${sql.identifier(column)})`),
      sql`, `,
    )
    return db
      .select({ columns: sql<ClusterColumns>`json_build_array(${arrays})` })
      .from(cells)
      .prepare(name)
  })
  const values = {
    ...filter,
    ...(source === 'cell-prices' && priceRangeValues(filter)),
    ...mapValues(filter),
    ...(counted && countedBoxValues(counted.box)),
    cell,
    shift: COUNTED_ZOOM - zoom,
  }
  const [{ columns }] = (await statement.execute(values)) as [{ columns: ClusterColumns }]
  const [counts, latitudeSums, longitudeSums, wests, souths, easts, norths] = columns
  if (counts === null) return []
  return counts.map((count, i) => ({
    count,
    latitudeSum: Number(latitudeSums[i]),
    longitudeSum: Number(longitudeSums[i]),
    west: wests[i]!,
    south: souths[i]!,
    east: easts[i]!,
    north: norths[i]!,
  }))
}
