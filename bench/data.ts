/**
 * The shape of the bench's data, shared by the SQL that seeds the listings (seed.ts) and the
 * requests that search and submit them (requests.ts), so both describe one market: the same
 * cities, types, deals, price bands and attribute values.
 */
import { seedDealTypes, seedPropertyTypes } from '../src/db/seed/dictionaries.js'
import { seedCities, seedDistricts } from '../src/db/seed/places.js'
import { attributesByName, type AttributeDefinition } from '../src/modules/reference/attribute-catalogue.js'

/** Bench tenants are recognised by this e-mail domain; a database with others is never wiped. */
export const BENCH_EMAIL_DOMAIN = 'bench.example'

/**
 * The API key of bench tenant `n`. Real keys are `mls_live_` and 43 characters; bench keys are
 * padded to the same length so the header and its digest cost what a real one does.
 */
export function benchApiKey(tenant: number): string {
  return `mls_live_bench_${String(tenant).padStart(37, '0')}`
}

/** A value and its share of the listings; shares of one table add up to 1. */
export interface Weighted<T> {
  value: T
  weight: number
}

/** Moscow and Saint Petersburg carry the market; the other shipped cities share the rest evenly. */
export const CITY_WEIGHTS: readonly Weighted<number>[] = seedCities.map((city) => ({
  value: city.id,
  weight: city.id === 1 ? 0.25 : city.id === 2 ? 0.15 : 0.6 / (seedCities.length - 2),
}))

// Ids of the fixed dictionaries (never renumbered, see dictionaries.ts).
export const FLAT = 1
export const LAND = 5
export const SALE = 1
export const LONG_RENT = 2
export const DAILY_RENT = 3

export const TYPE_WEIGHTS: readonly Weighted<number>[] = [
  { value: 1, weight: 0.6 }, // Квартира
  { value: 2, weight: 0.15 }, // Дом
  { value: 3, weight: 0.07 }, // Таунхаус
  { value: 4, weight: 0.1 }, // Коммерция
  { value: 5, weight: 0.08 }, // Земля
]

/** Land is not let by the day: a drawn daily rent of land becomes a sale (see dealFor). */
export const DEAL_WEIGHTS: readonly Weighted<number>[] = [
  { value: SALE, weight: 0.6 },
  { value: LONG_RENT, weight: 0.3 },
  { value: DAILY_RENT, weight: 0.1 },
]

/** About 85 % of a live MLS is published; the rest waits, was rejected, withdrawn or closed. */
export const STATUS_WEIGHTS: readonly Weighted<number>[] = [
  { value: 2, weight: 0.85 },
  { value: 1, weight: 0.04 },
  { value: 3, weight: 0.03 },
  { value: 4, weight: 0.05 },
  { value: 5, weight: 0.03 },
]

export interface Band {
  min: number
  max: number
  /** Prices are rounded to this, as people write them. */
  step: number
}

/** Prices by deal type, drawn log-uniformly: cheap offers are more common than dear ones. */
export const PRICE_BANDS: Readonly<Record<number, Band>> = {
  [SALE]: { min: 2_000_000, max: 60_000_000, step: 10_000 },
  [LONG_RENT]: { min: 15_000, max: 300_000, step: 1_000 },
  [DAILY_RENT]: { min: 1_500, max: 20_000, step: 100 },
}

/** Total area in m² by property type (land too: its `area_land` in sotka is area / 100). */
export const AREA_BANDS: Readonly<Record<number, Band>> = {
  1: { min: 18, max: 180, step: 0.1 },
  2: { min: 50, max: 400, step: 0.1 },
  3: { min: 70, max: 250, step: 0.1 },
  4: { min: 20, max: 1500, step: 0.1 },
  5: { min: 300, max: 5000, step: 1 },
}

/** Floors of the building by property type; land has none. */
export const FLOOR_BANDS: Readonly<Record<number, Band>> = {
  1: { min: 5, max: 30, step: 1 },
  2: { min: 1, max: 3, step: 1 },
  3: { min: 2, max: 4, step: 1 },
  4: { min: 1, max: 25, step: 1 },
}

/** Rooms follow the area: one per this many m², from 1 up to the cap. */
export const ROOMS_BY_AREA: Readonly<Record<number, { perRoom: number; cap: number }>> = {
  1: { perRoom: 25, cap: 6 },
  2: { perRoom: 35, cap: 10 },
  3: { perRoom: 35, cap: 8 },
  4: { perRoom: 60, cap: 20 },
}

export const MALE_NAMES = ['Иван', 'Алексей', 'Дмитрий', 'Сергей', 'Андрей', 'Михаил', 'Николай', 'Павел', 'Артём', 'Егор']
export const MALE_SURNAMES = ['Иванов', 'Петров', 'Смирнов', 'Кузнецов', 'Попов', 'Соколов', 'Лебедев', 'Козлов', 'Новиков', 'Морозов']
export const FEMALE_NAMES = ['Анна', 'Мария', 'Елена', 'Ольга', 'Наталья', 'Татьяна', 'Ирина', 'Светлана', 'Екатерина', 'Юлия']
export const FEMALE_SURNAMES = ['Иванова', 'Петрова', 'Смирнова', 'Кузнецова', 'Попова', 'Соколова', 'Лебедева', 'Козлова', 'Новикова', 'Морозова']

export const STREETS = [
  'Ленина',
  'Мира',
  'Советская',
  'Гагарина',
  'Садовая',
  'Лесная',
  'Школьная',
  'Молодёжная',
  'Центральная',
  'Набережная',
  'Пушкина',
  'Кирова',
  'Октябрьская',
  'Строителей',
  'Победы',
]

/** Descriptions carry no contacts (no digit runs, no e-mail), as the internal check demands. */
export const PHRASES = [
  'Светлая и тёплая, окна во двор, рядом парк и школа.',
  'Тихий двор, развитая инфраструктура, удобная транспортная доступность.',
  'Один собственник, документы готовы к сделке.',
  'Просторная планировка, высокие потолки, консьерж.',
  'В шаговой доступности метро, магазины и поликлиника.',
  'Свежий косметический ремонт, остаются мебель и техника.',
  'Ухоженный участок, подъезд круглый год.',
  'Отличный вариант для семьи с детьми.',
]

export const typeName = (id: number): string => seedPropertyTypes.find((type) => type.id === id)!.name
export const dealName = (id: number): string => seedDealTypes.find((deal) => deal.id === id)!.name

/** The property type ids an attribute of the catalogue applies to. */
export function typesFor(attribute: string): number[] {
  const definition = attributeDefinition(attribute)
  return seedPropertyTypes.filter((type) => definition.appliesTo.includes(type.name)).map((type) => type.id)
}

/** The exact allowed values of an enum attribute of the catalogue (Cyrillic spelling included). */
export function enumValues(attribute: string): readonly string[] {
  return attributeDefinition(attribute).allowedValues ?? []
}

function attributeDefinition(attribute: string): AttributeDefinition {
  const definition = attributesByName.get(attribute)
  if (!definition) throw new Error(`The bench uses attribute "${attribute}", which the catalogue no longer has`)
  return definition
}

/** Enum attributes both the seed and the submissions fill in, when they apply to the type. */
export const ENUM_ATTRIBUTES = ['building_type', 'condition', 'balcony', 'parking', 'land_category', 'commercial_type']
/** Boolean attributes likewise. */
export const BOOL_ATTRIBUTES = ['elevator', 'is_installment']

/** District ids of each shipped city (empty for a city without districts). */
export const DISTRICTS_BY_CITY: ReadonlyMap<number, number[]> = new Map(
  seedCities.map((city) => [city.id, seedDistricts.filter((d) => d.city_id === city.id).map((d) => d.id)]),
)

export const cityById = new Map(seedCities.map((city) => [city.id, city]))

// ---------------------------------------------------------------------------------------
// Where listings are: around their city's centre, most in one of its districts. The seed
// (in SQL) and the map searches (in JavaScript) place them by these same numbers.

/** Half a city's extent in degrees of latitude: Moscow ~17 km, Saint Petersburg ~13 km, the others ~8 km. */
export const citySpread = (cityId: number) => (cityId === 1 ? 0.15 : cityId === 2 ? 0.12 : 0.07)
/** A degree of longitude is shorter than one of latitude by this much at the city. */
export const lonScale = (cityId: number) => 1 / Math.cos((cityById.get(cityId)!.latitude * Math.PI) / 180)
/** One listing in this many has no coordinates (its agency gave none). */
export const UNLOCATED_SHARE = 0.03
/** A district's listings spread this much around its centre, a share of the city's spread (a normal deviation). */
export const DISTRICT_SPREAD = 0.25
/** Listings without a district spread this much around the city's centre. */
export const CITY_SPREAD = 0.45

/**
 * The centre of the city's `k`-th district of `n` (from 1): the first at the city's centre (a
 * city's first district is its central one in places.ts), the others on a ring at 55 % of the
 * city's spread, evenly around it.
 */
export function districtCentre(cityId: number, k: number, n: number): { lat: number; lon: number } {
  const city = cityById.get(cityId)!
  if (k === 1) return { lat: city.latitude, lon: city.longitude }
  const angle = (2 * Math.PI * (k - 2)) / Math.max(1, n - 1)
  const distance = 0.55 * citySpread(cityId)
  return { lat: city.latitude + distance * Math.sin(angle), lon: city.longitude + distance * Math.cos(angle) * lonScale(cityId) }
}

/** A standard normal draw (Box–Muller), as the seed draws it in SQL. */
const normal = () => Math.sqrt(-2 * Math.log(1 - Math.random())) * Math.cos(2 * Math.PI * Math.random())

/** Where a listing of the city (in the district, if any) stands, as the seed places them; rounded as stored. */
export function randomLocation(cityId: number, districtId?: number): { latitude: number; longitude: number } {
  const districts = DISTRICTS_BY_CITY.get(cityId) ?? []
  const k = districtId === undefined ? 0 : districts.indexOf(districtId) + 1
  const centre = k > 0 ? districtCentre(cityId, k, districts.length) : { lat: cityById.get(cityId)!.latitude, lon: cityById.get(cityId)!.longitude }
  const spread = citySpread(cityId) * (k > 0 ? DISTRICT_SPREAD : CITY_SPREAD)
  return {
    latitude: Number((centre.lat + spread * normal()).toFixed(6)),
    longitude: Number((centre.lon + spread * lonScale(cityId) * normal()).toFixed(6)),
  }
}

// ---------------------------------------------------------------------------------------
// Drawing in JavaScript (the seed draws the same in SQL).

export function pickWeighted<T>(table: readonly Weighted<T>[], r = Math.random()): T {
  let cumulative = 0
  for (const entry of table) {
    cumulative += entry.weight
    if (r < cumulative) return entry.value
  }
  return table[table.length - 1]!.value
}

export function pick<T>(values: readonly T[]): T {
  return values[Math.floor(Math.random() * values.length)]!
}

export function randomInt(min: number, max: number): number {
  return min + Math.floor(Math.random() * (max - min + 1))
}

/** A value of the band, log-uniform and rounded to its step (as the seed's SQL does). */
export function drawFromBand(band: Band, r = Math.random()): number {
  const value = Math.exp(Math.log(band.min) + r * (Math.log(band.max) - Math.log(band.min)))
  const rounded = Math.min(band.max, Math.max(band.min, Math.round(value / band.step) * band.step))
  // 0.1 steps leave binary noise (54.300000000000004); one decimal is what is meant.
  return band.step < 1 ? Number(rounded.toFixed(1)) : rounded
}

export function dealFor(type: number, deal: number): number {
  return type === LAND && deal === DAILY_RENT ? SALE : deal
}

export function roomsFor(type: number, area: number): number | undefined {
  const rule = ROOMS_BY_AREA[type]
  return rule && Math.min(rule.cap, Math.max(1, Math.round(area / rule.perRoom)))
}
