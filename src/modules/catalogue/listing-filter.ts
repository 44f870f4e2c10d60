/**
 * A search of the catalogue as a standing question: the filter parameters of
 * `GET /mls/properties`, without paging or order, that a webhook subscription keeps to receive
 * only the `mls.*` events of listings that match. The same parameters, types and bounds as the
 * catalogue's query; the cross-field checks of its search; and what each means for one listing,
 * decided in memory from the listing's facts (listing-facts.ts), as the catalogue's SQL decides
 * it for rows: a bound on a value the listing lacks (no price, no area, no coordinates) does not match.
 */
import { Type, type Static } from 'typebox'
import type { FieldError } from '../../lib/errors.js'
import { CatalogueQuery } from './catalogue.schemas.js'
import { distanceMetres, GeoParameterError, geoFilterOf, isWithinRadius, type GeoFilter } from './geo.js'
import type { ListingFacts } from './listing-facts.js'

const query = CatalogueQuery.properties

export const ListingFilter = Type.Object(
  {
    city_id: query.city_id,
    property_type_id: query.property_type_id,
    deal_type_id: query.deal_type_id,
    tenant_id: query.tenant_id,
    min_price: query.min_price,
    max_price: query.max_price,
    district_id: query.district_id,
    residential_complex_id: query.residential_complex_id,
    rooms: query.rooms,
    min_area: query.min_area,
    max_area: query.max_area,
    bbox: query.bbox,
    near: query.near,
    radius_m: query.radius_m,
  },
  {
    title: 'ListingFilter',
    additionalProperties: false,
    description: 'The filter parameters of `GET /mls/properties`, with the same meaning, types and bounds; every one given must match.',
    examples: [{ city_id: 1, deal_type_id: 1, max_price: 15_000_000, rooms: 2 }],
  },
)
export type ListingFilter = Static<typeof ListingFilter>

/** The map part of a filter (geo.ts), or what is wrong with it; `sort=distance` needs `near`. */
export function geoOf(filter: ListingFilter, sort?: string): GeoFilter | undefined {
  return geoFilterOf({ bbox: filter.bbox, near: filter.near, radius_m: filter.radius_m, sort })
}

/**
 * What is wrong with a filter the schema let through, every problem at once: the checks across
 * parameters that the catalogue's search makes (a minimum above its maximum, the map parameters
 * as geo.ts checks them, with the search's `sort`). Each error's `loc` starts with `at` (e.g.
 * `['body', 'filter']`, or `['query']` for a search).
 */
export function filterErrors(filter: ListingFilter, at: (string | number)[], sort?: string): FieldError[] {
  const errors: FieldError[] = []
  if (filter.min_price !== undefined && filter.max_price !== undefined && filter.min_price > filter.max_price) {
    errors.push({ loc: [...at, 'min_price'], msg: 'must not be greater than max_price' })
  }
  if (filter.min_area !== undefined && filter.max_area !== undefined && filter.min_area > filter.max_area) {
    errors.push({ loc: [...at, 'min_area'], msg: 'must not be greater than max_area' })
  }
  try {
    geoOf(filter, sort)
  } catch (error) {
    if (!(error instanceof GeoParameterError)) throw error
    for (const { parameter, message } of error.problems) errors.push({ loc: [...at, parameter], msg: message })
  }
  return errors
}

/** Whether a listing, as its facts say, matches. */
export type ListingMatcher = (facts: ListingFacts) => boolean

const equals = (wanted: number | undefined, actual: number | null) => wanted === undefined || actual === wanted
const atLeast = (bound: number | undefined, actual: number | null) => bound === undefined || (actual !== null && actual >= bound)
const atMost = (bound: number | undefined, actual: number | null) => bound === undefined || (actual !== null && actual <= bound)

/** Whether facts lie in the map part of a filter, as the catalogue's SQL decides it: inside the box, and within the circle's distance. */
function isWithin(geo: GeoFilter, facts: ListingFacts): boolean {
  const { latitude, longitude } = facts
  if (latitude === null || longitude === null) return false
  const { box, circle } = geo
  if (longitude < box.west || longitude > box.east || latitude < box.south || latitude > box.north) return false
  return circle === undefined || isWithinRadius(distanceMetres(latitude, longitude, circle.lat, circle.lon), circle.radiusM)
}

/**
 * Turns a valid filter (filterErrors found nothing) into a test of one listing's facts, built
 * once and run for every event: parsing is done here, not per listing.
 */
export function compileFilter(filter: ListingFilter): ListingMatcher {
  const geo = geoOf(filter)
  return (facts) =>
    equals(filter.city_id, facts.city_id) &&
    equals(filter.property_type_id, facts.property_type_id) &&
    equals(filter.deal_type_id, facts.deal_type_id) &&
    equals(filter.tenant_id, facts.tenant_id) &&
    equals(filter.district_id, facts.district_id) &&
    equals(filter.residential_complex_id, facts.residential_complex_id) &&
    equals(filter.rooms, facts.rooms) &&
    atLeast(filter.min_price, facts.price) &&
    atMost(filter.max_price, facts.price) &&
    atLeast(filter.min_area, facts.area) &&
    atMost(filter.max_area, facts.area) &&
    (geo === undefined || isWithin(geo, facts))
}
