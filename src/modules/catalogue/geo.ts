/**
 * The catalogue's map parameters, parsed and checked: pure functions, shared by every caller
 * that takes the catalogue's filters (a search, clusters, a filtered subscription).
 */
import { DECIMAL_NUMBER_TEXT } from '../../lib/decimals.js'

/** An area on the map, edges inclusive, in degrees: west ≤ east and south ≤ north. */
export interface GeoBox {
  west: number
  south: number
  east: number
  north: number
}

/** A point and a distance from it, in metres. */
export interface GeoCircle {
  lat: number
  lon: number
  radiusM: number
}

/** The map part of a search, as the SQL takes it: the box any match lies in, and the circle if `near` was given. */
export interface GeoFilter {
  box: GeoBox
  circle: GeoCircle | undefined
}

/** The largest `radius_m`: a city and its suburbs. */
export const MAX_RADIUS_M = 100_000
/** The mean Earth radius (IUGG), as the SQL's distance uses it. */
export const EARTH_RADIUS_M = 6_371_008.8
/** Metres in a degree of latitude, on that sphere. */
const METRES_PER_DEGREE = (Math.PI * EARTH_RADIUS_M) / 180

/** What is wrong with one map parameter: `parameter` names it, `message` says what. */
export interface GeoProblem {
  parameter: string
  message: string
}

/** Thrown for bad map parameters: one problem per parameter, every parameter's at once. */
export class GeoParameterError extends Error {
  readonly problems: GeoProblem[]

  constructor(problems: GeoProblem[]) {
    super(problems.map(({ parameter, message }) => `${parameter} ${message}`).join('; '))
    this.problems = problems
  }
}

const problem = (parameter: string, message: string) => new GeoParameterError([{ parameter, message }])

/** Numbers separated by commas, exactly `count` of them, each finite and written as every query number is. */
function numbersOf(text: string, count: number, parameter: string, shape: string): number[] {
  const parts = text.split(',')
  const values = parts.map((part) => (DECIMAL_NUMBER_TEXT.test(part) ? Number(part) : NaN))
  if (parts.length !== count || values.some((value) => !Number.isFinite(value))) {
    throw problem(parameter, `must be ${count} numbers separated by commas: ${shape}`)
  }
  return values
}

function checkLatitude(value: number, parameter: string, name: string): void {
  if (value < -90 || value > 90) throw problem(parameter, `${name} must be a latitude, from -90 to 90`)
}

function checkLongitude(value: number, parameter: string, name: string): void {
  if (value < -180 || value > 180) throw problem(parameter, `${name} must be a longitude, from -180 to 180`)
}

/** `minLon,minLat,maxLon,maxLat` → a box; a box across the antimeridian is two searches, so min must be below max. */
export function parseBbox(text: string, parameter = 'bbox'): GeoBox {
  const [west, south, east, north] = numbersOf(text, 4, parameter, 'minLon,minLat,maxLon,maxLat') as [number, number, number, number]
  checkLongitude(west, parameter, 'minLon')
  checkLatitude(south, parameter, 'minLat')
  checkLongitude(east, parameter, 'maxLon')
  checkLatitude(north, parameter, 'maxLat')
  if (west >= east) throw problem(parameter, 'minLon must be less than maxLon')
  if (south >= north) throw problem(parameter, 'minLat must be less than maxLat')
  return { west, south, east, north }
}

/** `lat,lon` → a point. */
export function parseNear(text: string, parameter = 'near'): { lat: number; lon: number } {
  const [lat, lon] = numbersOf(text, 2, parameter, 'lat,lon') as [number, number]
  checkLatitude(lat, parameter, 'lat')
  checkLongitude(lon, parameter, 'lon')
  return { lat, lon }
}

/**
 * Whether a distance is within a radius, both in metres, compared to the millimetre. The
 * catalogue's SQL (catalogue.repository.ts) and a subscription's filter (listing-filter.ts)
 * compute the same haversine with different maths libraries, whose results differ in their
 * last bits; compared exactly, a listing at the very edge could match one and not the other.
 * Both round the same way (half up), here and in SQL as `floor(metres * 1000 + 0.5)`.
 */
const toMillimetres = (metres: number) => Math.floor(metres * 1000 + 0.5)
export const isWithinRadius = (distance: number, radiusM: number) => toMillimetres(distance) <= toMillimetres(radiusM)

/** Past the radius, what the circle's box keeps besides: a match is up to half a millimetre out (isWithinRadius), and the box's edges are computed in floating point. */
const BOX_MARGIN_M = 0.01

/**
 * A box of whole degrees' fractions that holds the circle: its latitudes by the radius, its
 * longitudes widened by the latitude where a degree is shortest, with a margin (BOX_MARGIN_M)
 * so that a listing on the circle's edge is never left out of it. Near a pole, or across the
 * antimeridian, every longitude.
 */
export function boxAround(circle: GeoCircle): GeoBox {
  const dLat = (circle.radiusM + BOX_MARGIN_M) / METRES_PER_DEGREE
  const south = Math.max(-90, circle.lat - dLat)
  const north = Math.min(90, circle.lat + dLat)
  const widest = Math.cos((Math.max(Math.abs(south), Math.abs(north)) * Math.PI) / 180)
  const dLon = widest > 1e-9 ? dLat / widest : 360
  const west = circle.lon - dLon
  const east = circle.lon + dLon
  if (west < -180 || east > 180) return { west: -180, south, east: 180, north }
  return { west, south, east, north }
}

/** The overlap of two boxes, or undefined when they do not meet. */
export function intersectBoxes(a: GeoBox, b: GeoBox): GeoBox | undefined {
  const box = { west: Math.max(a.west, b.west), south: Math.max(a.south, b.south), east: Math.min(a.east, b.east), north: Math.min(a.north, b.north) }
  return box.west <= box.east && box.south <= box.north ? box : undefined
}

/** The great-circle distance in metres (haversine, on the sphere of EARTH_RADIUS_M), as the SQL computes it. */
export function distanceMetres(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const rad = Math.PI / 180
  const a = Math.sin(((lat2 - lat1) * rad) / 2) ** 2 + Math.cos(lat1 * rad) * Math.cos(lat2 * rad) * Math.sin(((lon2 - lon1) * rad) / 2) ** 2
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(a)))
}

/** The map parameters of a catalogue query, as the query string gives them. */
export interface GeoQuery {
  bbox?: string | undefined
  near?: string | undefined
  radius_m?: number | undefined
  sort?: string | undefined
}

/**
 * The map filter of a query, or undefined without one. `near` needs `radius_m` (and only it
 * takes one); `sort=distance` needs `near`. With both `bbox` and `near`, a match is in both;
 * when they do not meet, the box is empty (west > east) and nothing matches.
 */
export function geoFilterOf(query: GeoQuery): GeoFilter | undefined {
  const problems: GeoProblem[] = []
  /** The parsed value, or undefined with its problem noted, so that every parameter is checked. */
  const checked = <T>(parse: () => T): T | undefined => {
    try {
      return parse()
    } catch (error) {
      if (!(error instanceof GeoParameterError)) throw error
      problems.push(...error.problems)
      return undefined
    }
  }
  const { bbox, near } = query
  const box = bbox === undefined ? undefined : checked(() => parseBbox(bbox))
  const point = near === undefined ? undefined : checked(() => parseNear(near))
  if (near === undefined) {
    if (query.radius_m !== undefined) problems.push({ parameter: 'radius_m', message: 'is only taken with near' })
    if (query.sort === 'distance') problems.push({ parameter: 'sort', message: 'distance needs near' })
  } else if (query.radius_m === undefined) {
    problems.push({ parameter: 'radius_m', message: 'is required with near' })
  } else if (!(query.radius_m > 0 && query.radius_m <= MAX_RADIUS_M)) {
    problems.push({ parameter: 'radius_m', message: `must be over 0 and at most ${MAX_RADIUS_M}` })
  }
  if (problems.length > 0) throw new GeoParameterError(problems)
  if (!point) return box && { box, circle: undefined }
  const circle = { ...point, radiusM: query.radius_m! }
  const around = boxAround(circle)
  return { box: box ? (intersectBoxes(box, around) ?? { west: 1, south: 0, east: -1, north: 0 }) : around, circle }
}

/** Cells per side of a map tile: a tile of 256 px holds 8 × 8 clusters, one per 32 px. */
export const CELLS_PER_TILE = 8
/** The most cells a clusters' box may span on either side: 32 tiles, wider than any screen. */
export const MAX_CELLS_PER_SIDE = 256

/**
 * The side of a cluster's cell in degrees at `zoom`: a web-mercator tile spans 360 / 2^zoom
 * degrees of longitude; the grid splits it in CELLS_PER_TILE and uses the same step for
 * latitudes (square in degrees, so a little taller than wide on the ground).
 */
export const cellDegrees = (zoom: number) => 360 / 2 ** zoom / CELLS_PER_TILE

/**
 * What is wrong with a clusters' box at `zoom`, beside what parseBbox finds (reported with the
 * other filters): more than MAX_CELLS_PER_SIDE cells on a side, when the map would be all
 * clusters of one.
 */
export function clusterBoxProblems(bbox: string, zoom: number): GeoProblem[] {
  let box: GeoBox
  try {
    box = parseBbox(bbox)
  } catch (error) {
    if (error instanceof GeoParameterError) return []
    throw error
  }
  const cell = cellDegrees(zoom)
  if ((box.east - box.west) / cell <= MAX_CELLS_PER_SIDE && (box.north - box.south) / cell <= MAX_CELLS_PER_SIDE) return []
  return [{ parameter: 'bbox', message: `spans more than ${MAX_CELLS_PER_SIDE / CELLS_PER_TILE} map tiles on a side at zoom ${zoom}` }]
}

/**
 * The zoom of the grid the database counts listings on (catalogue_counts_by_cell, migration
 * 0026) and keys its map index by (catalogue_geo_idx): each cell of a coarser zoom is an exact
 * union of these cells.
 */
export const COUNTED_ZOOM = 11
/** The side of a counted cell, in degrees: the literal 0.02197265625 of migration 0026. */
export const COUNTED_CELL_DEGREES = cellDegrees(COUNTED_ZOOM)

/** The row or column of the counted grid a coordinate falls in, as the SQL computes it: floor(degrees / side) in float8. */
export const countedCellOf = (degrees: number) => Math.floor(degrees / COUNTED_CELL_DEGREES)

/** Integers from `first` to `last`, both included. */
const span = (first: number, last: number) => Array.from({ length: Math.max(last - first + 1, 0) }, (_, i) => first + i)

/** The rows of the counted grid a box's latitudes fall in, south first: what catalogue_geo_idx reads of it. */
export const boxRows = (box: GeoBox) => span(countedCellOf(box.south), countedCellOf(box.north))

/**
 * A box split for counting: the counted cells wholly inside it, whose listings
 * catalogue_counts_by_cell sums, and the edge around them, whose listings are counted one by
 * one: the rows its south and north edges cross (`edgeRows`), and in the rows between, the
 * columns its west and east edges cross. A row or column the edge crosses may also hold
 * listings outside the box, so only those strictly between the edges' cells are inside, whatever
 * the rounding of the division: a cell's listings lie between those of its neighbours.
 */
export interface CountedBox {
  innerRows: number[]
  firstInnerColumn: number
  lastInnerColumn: number
  edgeRows: number[]
  westColumn: number
  eastColumn: number
}

/** The box split for counting, or undefined when no counted cell lies wholly inside it. */
export function countedBoxOf(box: GeoBox): CountedBox | undefined {
  const [southRow, northRow] = [countedCellOf(box.south), countedCellOf(box.north)]
  const [westColumn, eastColumn] = [countedCellOf(box.west), countedCellOf(box.east)]
  if (northRow - southRow < 2 || eastColumn - westColumn < 2) return undefined
  return {
    innerRows: span(southRow + 1, northRow - 1),
    firstInnerColumn: westColumn + 1,
    lastInnerColumn: eastColumn - 1,
    edgeRows: [southRow, northRow],
    westColumn,
    eastColumn,
  }
}
