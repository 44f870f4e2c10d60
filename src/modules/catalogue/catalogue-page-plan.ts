/**
 * How a catalogue page is read: pure decisions from a search and the counts the service
 * already has, so the SQL in catalogue.repository.ts stays a set of fixed statements.
 *
 * Page statements are written to be planned once and kept (PostgreSQL's generic plans, which
 * it takes after five runs when they cost no more than planning each run): planning a
 * catalogue query costs as much as running it. So each statement is written so that one plan
 * is right for all its values, and where the values decide the plan (a price range, newest
 * first) the service decides it, with the counts it already has, and picks the statement
 * written for that plan:
 * - `window`: a search's first matches in its order, on the index made for that order (see
 *   schema.ts), reading `windowFor(offset + limit)` of them; the page is cut from those.
 * - `walk`: a search with bounds (a price range newest first, an area on the map) and many
 *   matches: the first listings of the search without its bounds, in the page's order, as
 *   many as should hold the page (the depth), then the bounds, so only the walk on the index
 *   of that order can serve it. Short of the page (the matches were not spread over the order
 *   as the counts suggest), the page is read by `range` instead.
 * - `range`: a search with bounds and few matches: every match, found on a price index or the
 *   map's (catalogue_geo_idx), then sorted. Always for `sort=distance`, which no index orders.
 */
import type { catalogueSorts } from './catalogue.schemas.js'

export interface CatalogueFilter {
  cityId?: number | undefined
  propertyTypeId?: number | undefined
  dealTypeId?: number | undefined
  tenantId?: number | undefined
  minPrice?: number | undefined
  maxPrice?: number | undefined
  districtId?: number | undefined
  residentialComplexId?: number | undefined
  rooms?: number | undefined
  minArea?: number | undefined
  maxArea?: number | undefined
  /** An area on the map (geo.ts), edges inclusive: all four or none. */
  west?: number | undefined
  south?: number | undefined
  east?: number | undefined
  north?: number | undefined
  /** A circle on the map, in the box above: all three or none. */
  nearLat?: number | undefined
  nearLon?: number | undefined
  radiusM?: number | undefined
}
export type FilterKey = keyof CatalogueFilter

export type CatalogueSort = (typeof catalogueSorts)[number]

export type PagePlan = { kind: 'window'; window: number } | { kind: 'walk'; depth: number } | { kind: 'range' }

/** What the service knows of a search before it reads a page. */
export interface PageCounts {
  /** The search's total. */
  matches: number
  /** The total of the same search without its bounds (boundKeys). */
  withoutBounds: number
}

/** The filters a search uses, in a stable order: they name its statements. */
export const usedKeys = (filter: CatalogueFilter): FilterKey[] => (Object.keys(filter) as FilterKey[]).filter((key) => filter[key] !== undefined).sort()

export const isPriceBound = (key: FilterKey) => key === 'minPrice' || key === 'maxPrice'

const geoKeys = new Set<FilterKey>(['west', 'south', 'east', 'north', 'nearLat', 'nearLon', 'radiusM'])
export const isGeoKey = (key: FilterKey) => geoKeys.has(key)

/**
 * The filters a walk checks on the rows it reads rather than in the index it walks: an area
 * on the map always, a price range when the page is newest first (sorted by price, the price
 * index serves the range itself).
 */
export const isBound = (key: FilterKey, sort: CatalogueSort) => isGeoKey(key) || (sort === 'created_desc' && isPriceBound(key))
export const boundKeys = (filter: CatalogueFilter, sort: CatalogueSort): FilterKey[] => usedKeys(filter).filter((key) => isBound(key, sort))

/** The same search without its bounds: what a walk walks. */
export function withoutBounds(filter: CatalogueFilter, sort: CatalogueSort): CatalogueFilter {
  const unbounded = { ...filter }
  for (const key of boundKeys(filter, sort)) unbounded[key] = undefined
  return unbounded
}

/**
 * The smallest of 100, 400, 1,600… that reaches `rows`: a LIMIT written into the SQL as a
 * literal (an unknown LIMIT is costed as a tenth of all matches, which no generic plan
 * survives) from a handful of statements per filter shape.
 */
export function windowFor(rows: number): number {
  let window = 100
  while (window < rows) window *= 4
  return window
}

/** Whether a page's plan needs the search's counts: a search with bounds, in an order an index keeps. */
export const pageNeedsCounts = (filter: CatalogueFilter, sort: CatalogueSort) => sort !== 'distance' && boundKeys(filter, sort).length > 0

/**
 * The plan of the page that ends at row `end` (offset + limit). Without bounds, a window;
 * nearest first, the range. With bounds, walk the order if fewer index entries are read that
 * way (about `end` × all / matches of them, twice that to be safe) than there are matches;
 * else the range.
 */
export function planPage(filter: CatalogueFilter, sort: CatalogueSort, end: number, counts?: PageCounts): PagePlan {
  if (sort === 'distance') return { kind: 'range' }
  if (!pageNeedsCounts(filter, sort)) return { kind: 'window', window: windowFor(end) }
  if (!counts) throw new Error('a page of a search with bounds is planned from its counts')
  const depth = Math.ceil((2 * end * counts.withoutBounds) / Math.max(counts.matches, 1))
  return depth < counts.matches ? { kind: 'walk', depth: windowFor(depth) } : { kind: 'range' }
}

/**
 * Which index finds the matches of a search with both a box on the map and a price range when
 * they are read one by one (a count, a `range` page, clusters): catalogue_geo_idx (`box`) or a
 * price index (`price`). One generic plan serves every box and every range, and it took the
 * price index for all of them: a street's box with flats for sale between 2.15 and 22.44 M read
 * 211,000 index entries for 46 matches (89 ms, `EXPLAIN ANALYZE` at 1,000,000 listings). So the
 * service decides, as it does for pages, from what each index would read: about the listings in
 * the counted cells the box touches against the listings in the price range without the box.
 */
export type MatchesIndex = 'box' | 'price'

/** Whether a search's statements need a MatchesIndex: it has both a box and a price range. */
export const needsMatchesIndex = (filter: CatalogueFilter) => filter.south !== undefined && (filter.minPrice !== undefined || filter.maxPrice !== undefined)

/**
 * The part of a search a price index reads when it finds the matches: the price range with the
 * filters the price indexes are keyed by (see schema.ts). Its total is about what it reads.
 */
export const priceIndexedPart = ({ cityId, districtId, propertyTypeId, dealTypeId, minPrice, maxPrice }: CatalogueFilter): CatalogueFilter => ({
  cityId,
  districtId,
  propertyTypeId,
  dealTypeId,
  minPrice,
  maxPrice,
})

/** The index that reads fewer entries: the box's listings against the price range's. */
export const matchesIndexFor = (listingsAroundBox: number, listingsInPriceRange: number): MatchesIndex =>
  listingsAroundBox <= listingsInPriceRange ? 'box' : 'price'

/** How many rows the page should have, given its counts: fewer from a walk means the walk fell short. */
export function expectedRows(limit: number, offset: number, counts: PageCounts): number {
  return Math.min(limit, Math.max(counts.matches - offset, 0))
}
