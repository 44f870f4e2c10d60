import { remembered } from '../../../lib/remembered.js'

/**
 * Finds the reference city and district a feed names. CRMs write places by hand: "г. Москва",
 * "САНКТ-ПЕТЕРБУРГ", "Дёмский" as "Демский", "Центральный район", "ЦАО". Names are compared
 * after folding case, ё and spacing, and without the words that only say what kind of place
 * it is.
 */

/** A reference city; `country` and `region` are optional, and used when given. */
export interface FeedCity {
  id: number
  name: string
  /** ISO 3166-1 alpha-2: decides the currency of the price. */
  country?: string
  /** Tells apart two cities of one name, with the offer's `location/region`. */
  region?: string
}

export interface FeedPlaces {
  cityByName(name: string, region?: string | null): FeedCity | null
  districtByName(cityId: number, name: string): { id: number; name: string } | null
}

/** Lower case, ё as е, dashes and spaces single, trimmed: the form two spellings of one name share. */
export function foldPlaceName(name: string): string {
  return name
    .normalize('NFC')
    .toLowerCase()
    .replace(/ё/g, 'е')
    .replace(/[\u2010-\u2015\u2212]/g, '-')
    .replace(/\s*-\s*/g, '-')
    .replace(/[\s\u00a0]+/g, ' ')
    .trim()
}

// "г. Москва", "город Москва", "г.Москва", "гор. Москва", "г Москва"; a word without its dot only
// when a space follows it, as it must never take the first letters of the name itself (Гатчина, Городец).
const CITY_KIND = /^(?:г\.|гор\.|город(?=\s)|г(?=\s))\s*(?=\S)/
const DISTRICT_KIND = /(?:^|\s)(?:район|р-н|р-он|административный округ|внутригородской округ|округ|ао)\.?(?=\s|$)/g

function cityKey(name: string): string {
  return foldPlaceName(name).replace(CITY_KIND, '').trim()
}

function districtKey(name: string): string {
  return foldPlaceName(name).replace(DISTRICT_KIND, ' ').replace(/\s+/g, ' ').trim()
}

/**
 * Moscow's okrugs go by their initials in most CRMs: ЦАО, СВАО, ЮЗАО. The initials are taken
 * from the names themselves; one two districts of a city would share (Западный and
 * Зеленоградский: ЗАО) stays with the first, and the other is reached by its first three
 * letters (ЗелАО), as Muscovites write it.
 */
function okrugAbbreviations(name: string): string[] {
  const folded = foldPlaceName(name)
  if (!folded.endsWith('административный округ')) return []
  const words = folded
    .replace(/административный округ$/, '')
    .trim()
    .split(/[\s-]+/)
  return [`${words.map((word) => word[0]).join('')}ао`, `${words[0]!.slice(0, 3)}ао`]
}

export function feedPlaces(cities: readonly FeedCity[], districts: readonly { id: number; city_id: number; name: string }[]): FeedPlaces {
  const citiesByKey = new Map<string, FeedCity[]>()
  for (const city of [...cities].sort((a, b) => a.id - b.id)) {
    const key = cityKey(city.name)
    const found: FeedCity = {
      id: city.id,
      name: city.name,
      ...(city.country ? { country: city.country } : {}),
      ...(city.region ? { region: city.region } : {}),
    }
    citiesByKey.set(key, [...(citiesByKey.get(key) ?? []), found])
  }
  const districtsByKey = new Map<string, { id: number; name: string }>()
  const remember = (cityId: number, key: string, district: { id: number; name: string }) => {
    const scoped = `${cityId}\u0000${key}`
    if (!districtsByKey.has(scoped)) districtsByKey.set(scoped, district)
  }
  // Full names first, so an abbreviation never shadows a real name.
  for (const district of districts) remember(district.city_id, districtKey(district.name), { id: district.id, name: district.name })
  for (const district of districts) {
    for (const abbreviation of okrugAbbreviations(district.name)) remember(district.city_id, abbreviation, { id: district.id, name: district.name })
  }
  // A feed names its few places in every offer: each spelling is folded once.
  const cityKeyOf = remembered(cityKey)
  const districtKeyOf = remembered(districtKey)
  const regionKeyOf = remembered(foldPlaceName)
  return {
    cityByName: (name, region) => {
      const candidates = citiesByKey.get(cityKeyOf(name)) ?? []
      // Two cities of one name (Кировск of two regions): the region tells them apart; without it, the first added.
      const inRegion = region ? candidates.find((city) => city.region !== undefined && regionKeyOf(city.region) === regionKeyOf(region)) : undefined
      return inRegion ?? candidates[0] ?? null
    },
    districtByName: (cityId, name) => {
      const key = districtKeyOf(name)
      return key === '' ? null : (districtsByKey.get(`${cityId}\u0000${key}`) ?? null)
    },
  }
}
