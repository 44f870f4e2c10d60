/**
 * What the load looks like: a new random request for every one autocannon sends, drawn from
 * the same market the seed built (data.ts), so the database cannot answer from one hot page.
 */
import { randomBytes } from 'node:crypto'
import type { PropertySubmission } from '../src/modules/properties/properties.schemas.js'
import {
  AREA_BANDS,
  benchApiKey,
  BOOL_ATTRIBUTES,
  CITY_WEIGHTS,
  cityById,
  citySpread,
  dealFor,
  dealName,
  DEAL_WEIGHTS,
  DISTRICTS_BY_CITY,
  drawFromBand,
  ENUM_ATTRIBUTES,
  enumValues,
  FEMALE_NAMES,
  FEMALE_SURNAMES,
  FLAT,
  FLOOR_BANDS,
  LAND,
  MALE_NAMES,
  MALE_SURNAMES,
  PHRASES,
  pick,
  pickWeighted,
  PRICE_BANDS,
  randomInt,
  randomLocation,
  lonScale,
  roomsFor,
  STREETS,
  TYPE_WEIGHTS,
  typeName,
  typesFor,
} from './data.js'

export interface BenchRequest {
  method: 'GET' | 'POST'
  path: string
  headers?: Record<string, string>
  body?: string | Buffer
}

/**
 * (b) One catalogue search. A fifth of visitors browse (no filter, or only a city); the rest
 * narrow by city, type and deal, often a price band of that deal, sometimes rooms or a
 * district, sometimes cheapest first; pages are 20 or 50 and rarely deeper than 200.
 */
export function catalogueSearch(): BenchRequest {
  const query = new URLSearchParams()
  const roll = Math.random()
  if (roll < 0.08) {
    // the landing page: everything, newest first
  } else if (roll < 0.2) {
    query.set('city_id', String(pickWeighted(CITY_WEIGHTS)))
  } else {
    const city = Math.random() < 0.9 ? pickWeighted(CITY_WEIGHTS) : undefined
    if (city !== undefined) query.set('city_id', String(city))
    narrowSearch(query)
    const districts = city === undefined ? [] : (DISTRICTS_BY_CITY.get(city) ?? [])
    if (districts.length > 0 && Math.random() < 0.15) query.set('district_id', String(pick(districts)))
  }
  if (Math.random() < 0.15) query.set('sort', 'price_asc')
  const limit = Math.random() < 0.5 ? 20 : 50
  query.set('limit', String(limit))
  // most read the first page; the others page on, at most to offset 200
  query.set('offset', String(Math.random() < 0.6 ? 0 : limit * randomInt(1, Math.floor(200 / limit))))
  return { method: 'GET', path: `/mls/properties?${query.toString()}` }
}

/** Type, deal, a price band and rooms as visitors narrow a search, each often left out. */
function narrowSearch(query: URLSearchParams): void {
  const type = Math.random() < 0.75 ? pickWeighted(TYPE_WEIGHTS) : undefined
  const deal = Math.random() < 0.85 ? dealFor(type ?? 0, pickWeighted(DEAL_WEIGHTS)) : undefined
  if (type !== undefined) query.set('property_type_id', String(type))
  if (deal !== undefined) query.set('deal_type_id', String(deal))
  if (deal !== undefined && Math.random() < 0.5) {
    const [low, high] = [drawFromBand(PRICE_BANDS[deal]!), drawFromBand(PRICE_BANDS[deal]!)].sort((x, y) => x - y)
    // some set a budget only, the others a band
    if (Math.random() < 0.7) query.set('min_price', String(low))
    query.set('max_price', String(high))
  }
  if (type !== LAND && Math.random() < 0.2) query.set('rooms', String(randomInt(1, 4)))
}

/** How far a map shows at each zoom, half its height in degrees of latitude: the whole city, a district, a few streets. */
const MAP_VIEWS = [
  { zoom: 'city', halfHeight: (cityId: number) => citySpread(cityId) },
  { zoom: 'district', halfHeight: () => 0.02 },
  { zoom: 'street', halfHeight: () => 0.003 },
] as const

/**
 * A map's visible box: centred on the city (at city zoom) or on a random place of it where
 * listings are, as wide as a 16:9 screen of that height; `minLon,minLat,maxLon,maxLat`.
 */
function mapBox(cityId: number, view: (typeof MAP_VIEWS)[number]): string {
  const city = cityById.get(cityId)!
  const centre =
    view.zoom === 'city' ? { latitude: city.latitude, longitude: city.longitude } : randomLocation(cityId, pick(DISTRICTS_BY_CITY.get(cityId) ?? [0]))
  const halfHeight = view.halfHeight(cityId)
  const halfWidth = halfHeight * (16 / 9) * lonScale(cityId)
  return [centre.longitude - halfWidth, centre.latitude - halfHeight, centre.longitude + halfWidth, centre.latitude + halfHeight]
    .map((value) => value.toFixed(5))
    .join(',')
}

/** (g) A map search: a random box at city, district or street zoom, with a random filter, the first page. */
export function mapSearch(): BenchRequest {
  const query = new URLSearchParams()
  query.set('bbox', mapBox(pickWeighted(CITY_WEIGHTS), pick(MAP_VIEWS)))
  narrowSearch(query)
  query.set('limit', String(Math.random() < 0.5 ? 20 : 50))
  return { method: 'GET', path: `/mls/properties?${query.toString()}` }
}

/** The zoom at which a city's whole box is a few hundred cells of the clusters' grid. */
const CITY_ZOOM = 11

/** (h) Clusters of a whole city's box, with a random filter. */
export function mapClusters(): BenchRequest {
  const query = new URLSearchParams()
  query.set('bbox', mapBox(pickWeighted(CITY_WEIGHTS), MAP_VIEWS[0]))
  query.set('zoom', String(CITY_ZOOM))
  narrowSearch(query)
  return { method: 'GET', path: `/mls/clusters?${query.toString()}` }
}

/** (c) One published listing, picked from a few thousand. */
export function catalogueDetail(publishedIds: readonly number[]): BenchRequest {
  return { method: 'GET', path: `/mls/properties/${pick(publishedIds)}` }
}

/** (d) A valid submission by a random bench agency. */
export function submission(tenants: number): BenchRequest {
  return {
    method: 'POST',
    path: '/properties',
    headers: { 'content-type': 'application/json', 'x-api-key': benchApiKey(randomInt(1, tenants)) },
    body: JSON.stringify(submissionBody()),
  }
}

/**
 * (e) Photo uploads by one agency, each to the next of its properties in turn, so none nears
 * IMAGE_MAX_PER_PROPERTY however long the run. The form is written by hand around the photo's
 * bytes: autocannon asks for each request synchronously, and copies the body into it anyway,
 * so one more 3 MB copy is all a fresh property id costs.
 */
export function photoUploads(photo: Buffer, apiKey: string, propertyIds: readonly number[]): () => BenchRequest {
  if (propertyIds.length === 0) throw new Error('photoUploads needs at least one property')
  const boundary = `----mls-bench-${randomBytes(12).toString('hex')}`
  const field = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
  const fileHead = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="photo.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`)
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
  const headers = { 'content-type': `multipart/form-data; boundary=${boundary}`, 'x-api-key': apiKey }
  let next = 0
  return () => {
    const propertyId = propertyIds[next++ % propertyIds.length]!
    const fields = Buffer.from(field('property_id', String(propertyId)) + field('sort_order', '0'))
    return { method: 'POST', path: '/property-images/upload', headers, body: Buffer.concat([fields, fileHead, photo, tail]) }
  }
}

export function submissionBody(): PropertySubmission {
  const type = pickWeighted(TYPE_WEIGHTS)
  const deal = dealFor(type, pickWeighted(DEAL_WEIGHTS))
  const cityId = pickWeighted(CITY_WEIGHTS)
  const city = cityById.get(cityId)!
  const districts = DISTRICTS_BY_CITY.get(cityId) ?? []
  const districtId = districts.length > 0 && Math.random() < 0.7 ? pick(districts) : undefined
  const street = pick(STREETS)
  const house = String(randomInt(1, 150))
  const apartment = type === FLAT ? String(randomInt(1, 300)) : undefined
  const attributes = submittedAttributes(type)
  const male = Math.random() < 0.5
  return {
    property_type: typeName(type) as PropertySubmission['property_type'],
    deal_type: dealName(deal) as PropertySubmission['deal_type'],
    price: drawFromBand(PRICE_BANDS[deal]!),
    description: `${typeName(type)}, ${attributes.area} м². ${pick(PHRASES)}`,
    owner: {
      name: male ? `${pick(MALE_NAMES)} ${pick(MALE_SURNAMES)}` : `${pick(FEMALE_NAMES)} ${pick(FEMALE_SURNAMES)}`,
      phone: russianMobile(),
    },
    location: {
      city_id: cityId,
      ...(districtId === undefined ? {} : { district_id: districtId }),
      address: `${city.name}, ул. ${street}, д. ${house}${apartment ? `, кв. ${apartment}` : ''}`,
      street,
      house_number: house,
      ...(apartment ? { apartment_number: apartment } : {}),
      ...randomLocation(cityId, districtId),
    },
    attributes,
  }
}

/** Attributes as the interface sends them, strings, each only where the catalogue allows it. */
function submittedAttributes(type: number): Record<string, string> {
  const area = drawFromBand(AREA_BANDS[type]!)
  const attributes: Record<string, string> = { area: String(area) }
  const rooms = roomsFor(type, area)
  if (rooms !== undefined) attributes.rooms = String(rooms)
  const floors = FLOOR_BANDS[type]
  if (floors) {
    const total = drawFromBand(floors)
    attributes.total_floors = String(total)
    if (type === FLAT || type === 4) attributes.floor = String(randomInt(1, total))
  }
  for (const name of ENUM_ATTRIBUTES) {
    if (typesFor(name).includes(type) && Math.random() < 0.8) attributes[name] = pick(enumValues(name))
  }
  for (const name of BOOL_ATTRIBUTES) {
    if (typesFor(name).includes(type)) attributes[name] = String(Math.random() < 0.5)
  }
  return attributes
}

/**
 * `+7 9xx xxx-xx-xx`, valid for libphonenumber. Codes 930… are partly unassigned (found by
 * checking normalisePhone over random numbers), so the bench leaves them out.
 */
function russianMobile(): string {
  let code: number
  do code = randomInt(900, 999)
  while (code === 930)
  const digits = String(randomInt(0, 9_999_999)).padStart(7, '0')
  return `+7 ${code} ${digits.slice(0, 3)}-${digits.slice(3, 5)}-${digits.slice(5)}`
}
