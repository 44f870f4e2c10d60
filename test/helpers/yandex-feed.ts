/**
 * Generates a Yandex.Realty feed of any size, in chunks, never whole in memory: realistic
 * offers over the shipped cities and districts, the same offer for the same seed and index
 * whatever the count (a feed of 10,000 is the first 10,000 of a feed of 100,000). Tests and
 * the bench use it; `tweak` changes single offers, `omit` leaves some out.
 */
import { seedCities, seedDistricts } from '../../src/db/seed/places.js'
import { seededRandom } from './random.js'

export interface GeneratedOffer {
  internalId: string
  /** `type`: продажа or аренда (or anything, to test refusals). */
  type: string
  category: string
  /** `price/period` for rents: месяц or день; null leaves it out. */
  period: string | null
  /** null leaves `price` out. */
  price: number | null
  currency: string
  city: string
  district: string | null
  address: string
  latitude: number
  longitude: number
  /** m²; null leaves the element out (as the other optional values). */
  area: number | null
  livingSpace: number | null
  kitchenSpace: number | null
  /** sotka */
  lotArea: number | null
  rooms: number | null
  floor: number | null
  floorsTotal: number | null
  builtYear: number | null
  buildingType: string | null
  renovation: string | null
  balcony: string | null
  bathroomUnit: string | null
  lift: boolean | null
  agentName: string
  agentPhone: string
  description: string
  images: string[]
  /** Raw XML put inside the offer as is, for elements the generator does not know. */
  extraXml: string
}

export interface GenerateOptions {
  seed?: number
  /** The photo URLs of offer i; none by default. */
  images?: (index: number) => string[]
  tweak?: (index: number) => Partial<GeneratedOffer>
  /** Leaves offer i out of the file (its index, and so its id, is not reused). */
  omit?: (index: number) => boolean
  /** Offers per yielded chunk; 50 by default. */
  offersPerChunk?: number
}

export const GENERATED_FEED_DATE = '2026-11-26T09:00:00+03:00'

const STREETS = ['ул. Ленина', 'ул. Гагарина', 'пр. Мира', 'ул. Советская', 'ул. Пушкина', 'наб. Речная', 'ул. Берёзовая', 'пер. Тихий']
const NAMES = ['Иван Петров', 'Мария Иванова', 'Алексей Смирнов', 'Ольга Кузнецова', 'Пётр Соколов', 'Анна Попова']
// Mobile prefixes that libphonenumber knows as Russian mobile ranges.
const MOBILE_PREFIXES = ['903', '905', '912', '915', '916', '926', '985']
const BUILDING_TYPES = ['панельный', 'кирпичный', 'монолит', 'кирпично-монолитный', 'brick', 'panel']
const RENOVATIONS = ['евро', 'дизайнерский', 'хороший', 'требует ремонта', 'косметический']
const BALCONIES = ['балкон', 'лоджия', '2 балкона', 'нет']
const BATHROOMS = ['совмещенный', 'раздельный', 'совмещённый']
const WORDS = ['Светлая', 'тёплая', 'уютная', 'просторная', 'с видом на парк', 'рядом школа', 'тихий двор', 'хорошие соседи', 'метро в 10 минутах']

/** The offer i of the feed generated with `seed`, before `tweak`. */
export function generatedOffer(index: number, seed = 1, images: (index: number) => string[] = () => []): GeneratedOffer {
  const next = seededRandom(seed * 1_000_003 + index)
  const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)]!
  const between = (low: number, high: number) => low + Math.floor(next() * (high - low + 1))
  const city = pick(seedCities)
  const districts = seedDistricts.filter((district) => district.city_id === city.id)
  const kind = next()
  const category =
    kind < 0.7 ? pick(['квартира', 'flat']) : kind < 0.85 ? pick(['дом', 'house', 'коттедж']) : kind < 0.93 ? pick(['участок', 'lot']) : 'коммерческая'
  const isFlat = category === 'квартира' || category === 'flat'
  const isLot = category === 'участок' || category === 'lot'
  const rent = next() < 0.25
  const rooms = isLot ? null : between(1, 5)
  const area = isLot ? null : between(25, 180) + between(0, 9) / 10
  const floorsTotal = isFlat ? between(5, 25) : isLot ? null : between(1, 3)
  return {
    internalId: `offer-${index}`,
    type: rent ? pick(['аренда', 'rent']) : pick(['продажа', 'sale']),
    category,
    period: rent ? pick(['месяц', 'month', 'день']) : null,
    price: rent ? between(15, 150) * 1000 : between(20, 400) * 100_000,
    currency: city.country === 'KZ' ? 'KZT' : pick(['RUB', 'RUR']),
    city: city.name,
    district: districts.length > 0 && next() < 0.8 ? pick(districts).name : null,
    address: `${pick(STREETS)}, д. ${between(1, 120)}`,
    latitude: Math.round((city.latitude + (next() - 0.5) / 10) * 1e6) / 1e6,
    longitude: Math.round((city.longitude + (next() - 0.5) / 10) * 1e6) / 1e6,
    area,
    livingSpace: isFlat && area !== null ? Math.round(area * 0.55) : null,
    kitchenSpace: isFlat && area !== null ? Math.round(area * 0.15) : null,
    lotArea: isFlat ? null : between(4, 30),
    rooms,
    floor: floorsTotal === null ? null : between(1, floorsTotal),
    floorsTotal,
    builtYear: isLot ? null : between(1955, 2025),
    buildingType: isLot ? null : pick(BUILDING_TYPES),
    renovation: isLot ? null : pick(RENOVATIONS),
    balcony: isFlat ? pick(BALCONIES) : null,
    bathroomUnit: isLot ? null : pick(BATHROOMS),
    lift: isFlat ? next() < 0.7 : null,
    agentName: pick(NAMES),
    agentPhone: `+7 ${pick(MOBILE_PREFIXES)} ${between(100, 999)}-${between(10, 99)}-${between(10, 99)}`,
    description: `${pick(WORDS)}, ${pick(WORDS)}, ${pick(WORDS)}.`,
    images: images(index),
    extraXml: '',
  }
}

/** Text as XML writes it inside an element or an attribute. */
export const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

function element(name: string, value: string | number | boolean | null): string {
  if (value === null) return ''
  const text = typeof value === 'boolean' ? (value ? 'да' : 'нет') : String(value)
  return `<${name}>${escapeXml(text)}</${name}>`
}

const areaElement = (name: string, value: number | null, unit: string) =>
  value === null ? '' : `<${name}><value>${value}</value><unit>${unit}</unit></${name}>`

/** One `<offer>` as the format writes it. */
export function offerXml(offer: GeneratedOffer): string {
  const price =
    offer.price === null
      ? ''
      : `<price><value>${offer.price}</value><currency>${escapeXml(offer.currency)}</currency>${element('period', offer.period)}</price>`
  return [
    `<offer internal-id="${escapeXml(offer.internalId)}">`,
    element('type', offer.type),
    '<property-type>жилая</property-type>',
    element('category', offer.category),
    `<creation-date>${GENERATED_FEED_DATE}</creation-date>`,
    '<location><country>Россия</country>',
    element('locality-name', offer.city),
    element('sub-locality-name', offer.district),
    element('address', offer.address),
    element('latitude', offer.latitude),
    element('longitude', offer.longitude),
    '</location>',
    `<sales-agent>${element('name', offer.agentName)}${element('phone', offer.agentPhone)}<category>агентство</category></sales-agent>`,
    price,
    areaElement('area', offer.area, 'кв. м'),
    areaElement('living-space', offer.livingSpace, 'кв. м'),
    areaElement('kitchen-space', offer.kitchenSpace, 'кв. м'),
    areaElement('lot-area', offer.lotArea, 'сотка'),
    element('rooms', offer.rooms),
    element('floor', offer.floor),
    element('floors-total', offer.floorsTotal),
    element('built-year', offer.builtYear),
    element('building-type', offer.buildingType),
    element('renovation', offer.renovation),
    element('balcony', offer.balcony),
    element('bathroom-unit', offer.bathroomUnit),
    element('lift', offer.lift),
    `<description><![CDATA[${offer.description.replace(/]]>/g, ']]]]><![CDATA[>')}]]></description>`,
    ...offer.images.map((url) => element('image', url)),
    offer.extraXml,
    '</offer>\n',
  ].join('')
}

/** The feed's text in chunks of `offersPerChunk` offers. */
export async function* generateYandexFeed(count: number, options: GenerateOptions = {}): AsyncGenerator<string> {
  const { seed = 1, images, tweak, omit, offersPerChunk = 50 } = options
  yield `<?xml version="1.0" encoding="UTF-8"?>\n<realty-feed xmlns="http://webmaster.yandex.ru/schemas/feed/realty/2010-06">\n<generation-date>${GENERATED_FEED_DATE}</generation-date>\n`
  let chunk: string[] = []
  for (let index = 0; index < count; index += 1) {
    if (omit?.(index)) continue
    chunk.push(offerXml({ ...generatedOffer(index, seed, images), ...tweak?.(index) }))
    if (chunk.length >= offersPerChunk) {
      yield chunk.join('')
      chunk = []
    }
  }
  yield `${chunk.join('')}</realty-feed>\n`
}

/** The whole generated feed as one string, for small feeds in tests (large ones stay streams). */
export async function yandexFeedText(count: number, options: GenerateOptions = {}): Promise<string> {
  let text = ''
  for await (const chunk of generateYandexFeed(count, options)) text += chunk
  return text
}
