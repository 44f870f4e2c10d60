/**
 * A search of the catalogue as a standing question: the filter parameters of
 * `GET /mls/properties`, without paging or order, that a webhook subscription keeps to receive
 * only the `mls.*` events of listings that match. The same parameters, types and bounds as the
 * catalogue's query; the cross-field checks of its search; and what each means for one listing,
 * decided in memory from the listing's facts (listing-facts.ts), as the catalogue's SQL decides
 * it for rows: a bound on a value the listing lacks (no price, no area, no coordinates) does not match.
 */
import { Type, type Static } from 'typebox'
import { Int32 } from '../../lib/schemas.js'
import type { FieldError } from '../../lib/errors.js'
import { CatalogueQuery } from './catalogue.schemas.js'
import type { ListingFacts } from './listing-facts.js'

const query = CatalogueQuery.properties

/** Longest radius of a `near` search: a metropolitan area, not a country. */
export const MAX_RADIUS_M = 100_000

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
    bbox: Type.Optional(
      Type.String({
        maxLength: 200,
        description: 'A box, `minLon,minLat,maxLon,maxLat` in degrees (WGS 84), edges included; a listing without coordinates does not match.',
        examples: ['37.55,55.70,37.70,55.80'],
      }),
    ),
    near: Type.Optional(
      Type.String({
        maxLength: 100,
        description: 'A point, `lat,lon` in degrees (WGS 84), with `radius_m`: listings at most that far from it; one without coordinates does not match.',
        examples: ['55.7558,37.6173'],
      }),
    ),
    radius_m: Type.Optional(Int32({ minimum: 1, maximum: MAX_RADIUS_M, description: 'With `near`: the distance in metres, 1 to 100,000.' })),
  },
  {
    title: 'ListingFilter',
    additionalProperties: false,
    description: 'The filter parameters of `GET /mls/properties`, with the same meaning, types and bounds; every one given must match.',
    examples: [{ city_id: 1, deal_type_id: 1, max_price: 15_000_000, rooms: 2 }],
  },
)
export type ListingFilter = Static<typeof ListingFilter>

/** `minLon,minLat,maxLon,maxLat`. */
export interface Bbox {
  minLon: number
  minLat: number
  maxLon: number
  maxLat: number
}

/** `lat,lon`. */
export interface Point {
  lat: number
  lon: number
}

const DECIMAL = /^-?\d+(\.\d+)?$/

function numbersOf(text: string, count: number): number[] | undefined {
  const parts = text.split(',')
  if (parts.length !== count || !parts.every((part) => DECIMAL.test(part))) return undefined
  return parts.map(Number)
}

const latitudeOk = (lat: number) => lat >= -90 && lat <= 90
const longitudeOk = (lon: number) => lon >= -180 && lon <= 180

/** A `bbox` parameter, or what is wrong with it. */
export function parseBbox(text: string): Bbox | string {
  const numbers = numbersOf(text, 4)
  if (!numbers) return 'must be four decimal numbers, "minLon,minLat,maxLon,maxLat"'
  const [minLon, minLat, maxLon, maxLat] = numbers as [number, number, number, number]
  if (!longitudeOk(minLon) || !longitudeOk(maxLon)) return 'longitudes must be from -180 to 180'
  if (!latitudeOk(minLat) || !latitudeOk(maxLat)) return 'latitudes must be from -90 to 90'
  if (minLon > maxLon) return 'minLon must not be greater than maxLon'
  if (minLat > maxLat) return 'minLat must not be greater than maxLat'
  return { minLon, minLat, maxLon, maxLat }
}

/** A `near` parameter, or what is wrong with it. */
export function parseNear(text: string): Point | string {
  const numbers = numbersOf(text, 2)
  if (!numbers) return 'must be two decimal numbers, "lat,lon"'
  const [lat, lon] = numbers as [number, number]
  if (!latitudeOk(lat)) return 'the latitude must be from -90 to 90'
  if (!longitudeOk(lon)) return 'the longitude must be from -180 to 180'
  return { lat, lon }
}

/**
 * What is wrong with a filter the schema let through: the checks across parameters that the
 * catalogue's search makes (a minimum above its maximum), and the geographic parameters'
 * formats. Each error's `loc` starts with `at` (e.g. `['body', 'filter']`).
 */
export function filterErrors(filter: ListingFilter, at: (string | number)[]): FieldError[] {
  const errors: FieldError[] = []
  if (filter.min_price !== undefined && filter.max_price !== undefined && filter.min_price > filter.max_price) {
    errors.push({ loc: [...at, 'min_price'], msg: 'must not be greater than max_price' })
  }
  if (filter.min_area !== undefined && filter.max_area !== undefined && filter.min_area > filter.max_area) {
    errors.push({ loc: [...at, 'min_area'], msg: 'must not be greater than max_area' })
  }
  if (filter.bbox !== undefined) {
    const bbox = parseBbox(filter.bbox)
    if (typeof bbox === 'string') errors.push({ loc: [...at, 'bbox'], msg: bbox })
  }
  if (filter.near !== undefined) {
    const near = parseNear(filter.near)
    if (typeof near === 'string') errors.push({ loc: [...at, 'near'], msg: near })
    if (filter.radius_m === undefined) errors.push({ loc: [...at, 'radius_m'], msg: 'is required with near' })
  } else if (filter.radius_m !== undefined) {
    errors.push({ loc: [...at, 'radius_m'], msg: 'is only allowed with near' })
  }
  return errors
}

/** Whether a listing, as its facts say, matches. */
export type ListingMatcher = (facts: ListingFacts) => boolean

const EARTH_RADIUS_M = 6_371_008.8

/** Great-circle distance (haversine) on a sphere of the Earth's mean radius, in metres. */
export function distanceM(a: Point, b: Point): number {
  const toRadians = Math.PI / 180
  const dLat = (b.lat - a.lat) * toRadians
  const dLon = (b.lon - a.lon) * toRadians
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * toRadians) * Math.cos(b.lat * toRadians) * Math.sin(dLon / 2) ** 2
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h)))
}

const equals = (wanted: number | undefined, actual: number | null) => wanted === undefined || actual === wanted
const atLeast = (bound: number | undefined, actual: number | null) => bound === undefined || (actual !== null && actual >= bound)
const atMost = (bound: number | undefined, actual: number | null) => bound === undefined || (actual !== null && actual <= bound)

/**
 * Turns a valid filter (filterErrors found nothing) into a test of one listing's facts, built
 * once and run for every event: parsing is done here, not per listing.
 */
export function compileFilter(filter: ListingFilter): ListingMatcher {
  const bbox = filter.bbox === undefined ? undefined : parseBbox(filter.bbox)
  const near = filter.near === undefined ? undefined : parseNear(filter.near)
  if (typeof bbox === 'string' || typeof near === 'string') throw new Error(`An invalid filter reached compileFilter: ${JSON.stringify(filter)}`)
  const radius = filter.radius_m ?? 0
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
    (bbox === undefined ||
      (facts.latitude !== null &&
        facts.longitude !== null &&
        facts.longitude >= bbox.minLon &&
        facts.longitude <= bbox.maxLon &&
        facts.latitude >= bbox.minLat &&
        facts.latitude <= bbox.maxLat)) &&
    (near === undefined || (facts.latitude !== null && facts.longitude !== null && distanceM(near, { lat: facts.latitude, lon: facts.longitude }) <= radius))
}
