/**
 * Turns one `<offer>` of a Yandex.Realty feed into the body a `PUT /properties/by-external-id`
 * takes, with what could not be taken said per offer. Pure: the places come in, nothing is
 * read or written. The table of what maps to what is docs/feeds.md#the-yandexrealty-format.
 */
import countryToCurrency from 'country-to-currency'
import type { CountryCode } from 'libphonenumber-js/max'
import { normalisePhone } from '../../../lib/phone.js'
import { remembered } from '../../../lib/remembered.js'
import { attributesByName } from '../../reference/attribute-catalogue.js'
import { EXTERNAL_ID_MAX_LENGTH, externalIdPattern, type PropertySubmission } from '../../properties/properties.schemas.js'
import { parseAttributes } from '../../properties/attributes.js'
import type { FeedOffer, XmlElement } from './feed-reader.js'
import { foldPlaceName, type FeedPlaces } from './feed-places.js'
import { isRefusal, type OfferProblem, type OfferProblemCodeName } from './offer-problems.js'

export { feedPlaces, type FeedCity, type FeedPlaces } from './feed-places.js'
export { isRefusal, offerProblemCodes, type OfferProblem } from './offer-problems.js'

export interface MappedOffer {
  internalId: string
  /** The listing to store; null when the offer is refused (a problem whose code `isRefusal`). */
  submission: PropertySubmission | null
  /** http(s) photo URLs in the feed's order, without repeats. */
  imageUrls: string[]
  problems: OfferProblem[]
}

type PropertyType = PropertySubmission['property_type']
type DealType = PropertySubmission['deal_type']

/** The same limits as the listing's columns and `external_id`. */
const MAX_DESCRIPTION = 10_000
const MAX_ADDRESS = 500
const MAX_APARTMENT = 50
const MAX_OWNER_NAME = 200
const MAX_PRICE = 9_999_999_999_999.99

/** Values written by hand (a building's type, a balcony), folded once per spelling: a feed repeats a few. */
const fold = remembered(foldPlaceName)

const quoted = (value: string) => `«${value.length > 80 ? `${value.slice(0, 80)}…` : value}»`

/**
 * A table of the format's words with no prototype: a word such as «constructor» or «__proto__»
 * finds nothing in it, as any other word it does not hold.
 */
function lookupTable<T>(entries: Record<string, T>): Readonly<Record<string, T>> {
  return Object.assign(Object.create(null) as Record<string, T>, entries)
}

// Values of the format, Russian and English, folded (lower case, ё as е).
const DEAL_TYPES: Record<string, 'sale' | 'rent'> = lookupTable({ продажа: 'sale', sale: 'sale', аренда: 'rent', rent: 'rent' })
const DAILY = new Set(['день', 'day', 'сутки', 'посуточно', 'daily'])
const MONTHLY = new Set(['месяц', 'month', 'monthly', 'в месяц'])

interface Category {
  type: PropertyType
  /** A room of a flat: stored as a flat of the rooms offered (see docs/feeds.md). */
  room?: boolean
}
const CATEGORIES: Record<string, Category> = lookupTable({
  квартира: { type: 'Квартира' },
  flat: { type: 'Квартира' },
  apartment: { type: 'Квартира' },
  комната: { type: 'Квартира', room: true },
  room: { type: 'Квартира', room: true },
  дом: { type: 'Дом' },
  house: { type: 'Дом' },
  коттедж: { type: 'Дом' },
  cottage: { type: 'Дом' },
  дача: { type: 'Дом' },
  'дом с участком': { type: 'Дом' },
  'house with lot': { type: 'Дом' },
  'часть дома': { type: 'Дом' },
  'part of house': { type: 'Дом' },
  таунхаус: { type: 'Таунхаус' },
  townhouse: { type: 'Таунхаус' },
  дуплекс: { type: 'Таунхаус' },
  duplex: { type: 'Таунхаус' },
  участок: { type: 'Земля' },
  lot: { type: 'Земля' },
  'земельный участок': { type: 'Земля' },
  коммерческая: { type: 'Коммерция' },
  commercial: { type: 'Коммерция' },
  'коммерческая недвижимость': { type: 'Коммерция' },
})

/**
 * A listing's price is in the money of its city's country, as every price of the MLS: the
 * feed's currency must be that one (a city without a known country counts as Russian). Feeds
 * name the money of the countries seeded with cities in words too; any other country's, which
 * an operator may add cities of, by its ISO 4217 code.
 */
interface LocalCurrency {
  names: ReadonlySet<string>
  inWords: string
}
const CURRENCIES: Record<string, LocalCurrency> = lookupTable({
  RU: { names: new Set(['rub', 'rur', 'руб', 'руб.', 'рубль', 'рублей', '₽']), inWords: 'в рублях (RUB)' },
  KZ: { names: new Set(['kzt', 'тенге', 'тг', '₸']), inWords: 'в тенге (KZT)' },
  BY: { names: new Set(['byn', 'бел. руб.', 'бел. руб']), inWords: 'в белорусских рублях (BYN)' },
})
const currencyCodes: Readonly<Record<string, string | undefined>> = lookupTable(countryToCurrency)
/** The money of a country, or undefined for a country that has none of its own on record. */
function localCurrency(country: string): LocalCurrency | undefined {
  const code = currencyCodes[country]
  return CURRENCIES[country] ?? (code === undefined ? undefined : { names: new Set([code.toLowerCase()]), inWords: `в валюте страны города (${code})` })
}

/** Area units, as a factor to m². */
const AREA_UNITS: Record<string, number> = lookupTable({
  'кв. м': 1,
  'кв.м': 1,
  'кв.м.': 1,
  'кв м': 1,
  'sq. m': 1,
  'sq.m': 1,
  'sq m': 1,
  м2: 1,
  'м²': 1,
  m2: 1,
  'm²': 1,
  сотка: 100,
  сотки: 100,
  соток: 100,
  сот: 100,
  'сот.': 100,
  sotka: 100,
  гектар: 10_000,
  га: 10_000,
  hectare: 10_000,
  ha: 10_000,
})

const BUILDING_TYPES: Record<string, string> = lookupTable({
  панельный: 'Панельный',
  panel: 'Панельный',
  кирпичный: 'Кирпичный',
  brick: 'Кирпичный',
  монолит: 'Монолит',
  монолитный: 'Монолит',
  monolit: 'Монолит',
  monolithic: 'Монолит',
  // Brick-monolith is a monolithic frame filled with brick: the frame is what the catalogue names.
  'кирпично-монолитный': 'Монолит',
  'монолитно-кирпичный': 'Монолит',
  'brick-monolit': 'Монолит',
  'brick-monolith': 'Монолит',
  'monolit-brick': 'Монолит',
  деревянный: 'Деревянный',
  wooden: 'Деревянный',
  wood: 'Деревянный',
  металлокаркас: 'Металлокаркас',
  'metal frame': 'Металлокаркас',
})

/** For houses, the walls: only where the feed's word names a material the catalogue has. */
const WALL_MATERIALS: Record<string, string> = lookupTable({
  кирпичный: 'Кирпич',
  кирпич: 'Кирпич',
  brick: 'Кирпич',
  деревянный: 'Дерево',
  дерево: 'Дерево',
  брус: 'Дерево',
  бревно: 'Дерево',
  wooden: 'Дерево',
  газоблок: 'Газоблок',
  газобетон: 'Газоблок',
  пеноблок: 'Газоблок',
  каркасный: 'Каркас',
  каркас: 'Каркас',
  'сип-панели': 'СИП-панели',
  сип: 'СИП-панели',
  полистиролбетон: 'Полистиролбетон',
})

// The format's renovation words, placed on the catalogue's four-step scale.
const CONDITIONS: Record<string, string> = lookupTable({
  дизайнерский: 'Дизайнерский',
  designer: 'Дизайнерский',
  евро: 'Евроремонт',
  евроремонт: 'Евроремонт',
  euro: 'Евроремонт',
  хороший: 'Косметический',
  good: 'Косметический',
  косметический: 'Косметический',
  cosmetic: 'Косметический',
  'частичный ремонт': 'Косметический',
  'partial renovation': 'Косметический',
  'с отделкой': 'Косметический',
  'чистовая отделка': 'Косметический',
  'требует ремонта': 'Без ремонта',
  'needs renovation': 'Без ремонта',
  'без ремонта': 'Без ремонта',
  'черновая отделка': 'Без ремонта',
  'предчистовая отделка': 'Без ремонта',
  'без отделки': 'Без ремонта',
})

const BATHROOMS: Record<string, string> = lookupTable({
  совмещенный: 'Совмещённый',
  combined: 'Совмещённый',
  раздельный: 'Раздельный',
  separated: 'Раздельный',
  separate: 'Раздельный',
})

const PARKING_KINDS: Record<string, string> = lookupTable({
  подземная: 'Подземная',
  underground: 'Подземная',
  наземная: 'Наземная',
  'open ground': 'Наземная',
  ground: 'Наземная',
  открытая: 'Наземная',
  гараж: 'Гараж',
  garage: 'Гараж',
  двор: 'Двор',
  'во дворе': 'Двор',
  дворовая: 'Двор',
})

const INTERNET_KINDS: Record<string, string> = lookupTable({
  оптика: 'Оптика',
  оптоволокно: 'Оптика',
  fiber: 'Оптика',
  проводной: 'Проводной',
  wired: 'Проводной',
  dsl: 'DSL',
  adsl: 'DSL',
  мобильный: 'Мобильный (4G/5G)',
  '4g': 'Мобильный (4G/5G)',
  '5g': 'Мобильный (4G/5G)',
})

const COMMERCIAL_TYPES: Record<string, string> = lookupTable({
  офис: 'Офис',
  'офисные помещения': 'Офис',
  office: 'Офис',
  'торговое помещение': 'Торговое',
  'торговые помещения': 'Торговое',
  retail: 'Торговое',
  'свободного назначения': 'Торговое',
  'free purpose': 'Торговое',
  склад: 'Склад',
  'складские помещения': 'Склад',
  warehouse: 'Склад',
  производство: 'Производство',
  'производственное помещение': 'Производство',
  manufacturing: 'Производство',
})

const LAND_CATEGORIES: Record<string, string> = lookupTable({
  ижс: 'ИЖС',
  'индивидуальное жилищное строительство': 'ИЖС',
  снт: 'СНТ',
  садоводство: 'СНТ',
  'садовое некоммерческое товарищество': 'СНТ',
  днп: 'СНТ',
  лпх: 'ЛПХ',
  'личное подсобное хозяйство': 'ЛПХ',
  коммерческое: 'Коммерческое',
})

const YES = new Set(['да', 'yes', 'true', '1', '+', 'есть', 'имеется'])
const NO = new Set(['нет', 'no', 'false', '0', '-', 'отсутствует'])

function readBool(raw: string): boolean | null {
  const value = fold(raw)
  if (YES.has(value)) return true
  if (NO.has(value)) return false
  return null
}

/** A number as CRMs write it: "8 500 000", "54,5", "1 200.50", "−1" (a typographic minus). */
function readNumber(raw: string): number | null {
  const compact = raw
    .replace(/[\s\u00a0\u202f']/g, '')
    .replace(',', '.')
    .replace(/^\u2212/, '-')
  if (!/^-?\d+(\.\d+)?$/.test(compact)) return null
  const value = Number(compact)
  return Number.isFinite(value) ? value : null
}

/** Two decimals, as the columns keep them: the value sent is the value stored, and compares equal next run. */
const round2 = (value: number) => roundTo(value, 2)

function roundTo(value: number, decimals: number): number {
  const scale = 10 ** decimals
  return Math.round(value * scale) / scale
}

/** A number as an attribute keeps it: to the decimals it takes (two where it sets none), so the value sent is the value stored. */
function asKept(name: string, value: number): number {
  return roundTo(value, attributesByName.get(name)!.decimals ?? 2)
}

function child(element: XmlElement | undefined, name: string): XmlElement | undefined {
  return element?.children.find((candidate) => candidate.name === name)
}

function childrenNamed(element: XmlElement, name: string): XmlElement[] {
  return element.children.filter((candidate) => candidate.name === name)
}

/** A path's names, split once: the paths are this module's own, a few dozen. */
const pathSteps = new Map<string, string[]>()
function stepsOf(path: string): string[] {
  let steps = pathSteps.get(path)
  if (!steps) pathSteps.set(path, (steps = path.split('/')))
  return steps
}

/** The trimmed text of the element at the path, or null when it is absent or blank. */
function textAt(element: XmlElement | undefined, path: string): string | null {
  let current = element
  for (const name of stepsOf(path)) current = child(current, name)
  const text = current?.text.trim()
  return text ? text : null
}

/** Reads one offer; each step adds its findings, and a refusal ends the offer. */
class OfferMapping {
  readonly problems: OfferProblem[] = []
  readonly attributes: Record<string, string> = {}
  private propertyType: PropertyType = 'Квартира'

  constructor(
    private readonly internalId: string,
    readonly offer: XmlElement,
  ) {}

  text(path: string): string | null {
    return textAt(this.offer, path)
  }

  problem(code: OfferProblemCodeName, field: string | null, message: string): void {
    this.problems.push({ internal_id: this.internalId, code, field, message })
  }

  refuse(code: OfferProblemCodeName, field: string | null, message: string): null {
    this.problem(code, field, message)
    return null
  }

  setPropertyType(type: PropertyType): void {
    this.propertyType = type
  }

  /**
   * Sets a catalogue attribute, checked by the same rules as a submission, so that a value
   * the service would refuse is left out here with a word, never refusing the whole offer.
   */
  attribute(name: string, value: string | number | boolean, field: string, raw: string): void {
    const definition = attributesByName.get(name)!
    if (!definition.appliesTo.includes(this.propertyType)) {
      this.problem(
        'not_applicable',
        field,
        `${capitalise(elementWord(field))} не указывается для типа «${this.propertyType}»; значение ${quoted(raw)} пропущено.`,
      )
      return
    }
    const text = typeof value === 'number' ? String(asKept(name, value)) : String(value)
    const { errors } = parseAttributes({ [name]: text })
    if (errors.length > 0) {
      this.problem('unknown_value', field, `Значение ${quoted(raw)} в ${elementWord(field, 'prepositional')} вне допустимых пределов; оно пропущено.`)
      return
    }
    this.attributes[name] = text
  }

  unknownValue(field: string, raw: string, expected: string): void {
    this.problem(
      'unknown_value',
      field,
      `Значение ${quoted(raw)} в ${elementWord(field, 'prepositional')} не распознано (ожидается ${expected}); оно пропущено.`,
    )
  }
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1)
}

/** How a message names an element: "элемент <floor>", "элементе <floor>". */
function elementWord(field: string, grammaticalCase: 'nominative' | 'prepositional' = 'nominative'): string {
  return `${grammaticalCase === 'nominative' ? 'элемент' : 'элементе'} <${field}>`
}

/** `agencyCountry`: the country the agency's phone numbers are read in, as the listings service reads its owners'. */
export function mapOffer(offer: FeedOffer, places: FeedPlaces, agencyCountry: CountryCode = 'RU'): MappedOffer {
  const internalId = offer.internalId
  const mapping = new OfferMapping(internalId, offer.element)
  // Every reason an offer is refused is reported at once; what would merely have been left out of it is not.
  const refused = (): MappedOffer => ({ internalId, submission: null, imageUrls: [], problems: mapping.problems.filter((problem) => isRefusal(problem.code)) })

  if (internalId === '') {
    mapping.refuse(
      'missing_internal_id',
      'internal-id',
      `У объявления в строке ${offer.line} нет атрибута internal-id: без него объявление не связать с объектом в MLS.`,
    )
    return refused()
  }
  // The rule of a listing's external_id, which the internal-id becomes.
  if ([...internalId].length > EXTERNAL_ID_MAX_LENGTH || !externalIdPattern.test(internalId)) {
    mapping.refuse('invalid_internal_id', 'internal-id', `internal-id длиннее ${EXTERNAL_ID_MAX_LENGTH} символов или содержит управляющие символы.`)
    return refused()
  }

  const deal = readDeal(mapping)
  const category = readCategory(mapping)
  if (!deal || !category) {
    // The other reasons it could be refused, as far as they are judged without the category.
    const place = readLocation(mapping, places)
    readPriceTerms(mapping, place === null ? null : place.country)
    return refused()
  }
  mapping.setPropertyType(category.type)

  const areas = readAreas(mapping, category)
  const place = readLocation(mapping, places)
  // With no city found (the offer refused for it) there is no country to judge the currency by.
  const price = readPrice(mapping, areas, category.type === 'Земля', place === null ? null : place.country)
  if (price === null || place === null) return refused()
  const location = place.location

  readBuilding(mapping, category)
  readAmenities(mapping, category)
  const owner = readOwner(mapping, agencyCountry)
  const description = readDescription(mapping)
  const imageUrls = readImages(mapping, offer.element)

  const submission: PropertySubmission = {
    property_type: category.type,
    deal_type: deal,
    price,
    description,
    owner,
    location,
    attributes: mapping.attributes,
  }
  return { internalId, submission, imageUrls, problems: mapping.problems }
}

function readDeal(mapping: OfferMapping): DealType | null {
  const raw = mapping.text('type')
  const kind = raw === null ? undefined : DEAL_TYPES[fold(raw)]
  if (!kind) {
    return mapping.refuse(
      'unknown_deal_type',
      'type',
      raw === null
        ? 'Не указан тип сделки (элемент <type>): «продажа» или «аренда».'
        : `Тип сделки ${quoted(raw)} не распознан: ожидается «продажа» или «аренда».`,
    )
  }
  if (kind === 'sale') return 'Продажа'
  const period = mapping.text('price/period')
  if (period === null || MONTHLY.has(fold(period))) return 'Долгосрочная аренда'
  if (DAILY.has(fold(period))) return 'Посуточная аренда'
  return mapping.refuse(
    'unsupported_rent_period',
    'price/period',
    `Период аренды ${quoted(period)} не поддерживается: MLS принимает аренду посуточно («день») или помесячно («месяц»).`,
  )
}

function readCategory(mapping: OfferMapping): Category | null {
  const raw = mapping.text('category')
  const category = raw === null ? undefined : CATEGORIES[fold(raw)]
  if (category) return category
  return mapping.refuse(
    'unknown_category',
    'category',
    raw === null
      ? 'Не указана категория объекта (элемент <category>).'
      : `Категория ${quoted(raw)} не поддерживается: MLS принимает квартиры, комнаты, дома, таунхаусы, участки и коммерческую недвижимость.`,
  )
}

/** The areas as the feed writes them, in m², for pricing by area; the attributes keep them rounded. */
interface Areas {
  total: number | null
  lot: number | null
}

/** An `<area>`-like element (`value` and `unit`) in m², unrounded; null when absent or unreadable. */
function readArea(mapping: OfferMapping, name: string, defaultUnit: string): number | null {
  return readAreaElement(mapping, child(mapping.offer, name), name, defaultUnit)
}

function readAreaElement(mapping: OfferMapping, element: XmlElement | undefined, name: string, defaultUnit: string): number | null {
  const value = textAt(element, 'value')
  if (value === null) return null
  const number = readNumber(value)
  if (number === null || number <= 0) {
    mapping.unknownValue(`${name}/value`, value, 'положительное число')
    return null
  }
  const unit = textAt(element, 'unit') ?? defaultUnit
  const factor = AREA_UNITS[fold(unit)]
  if (factor === undefined) {
    mapping.unknownValue(`${name}/unit`, unit, '«кв. м», «сотка» или «гектар»')
    return null
  }
  return number * factor
}

/**
 * The area of the rooms a room offer sells: the format gives one `<room-space>` per room
 * offered, and the listing is of them all. Null when there is none, or when one of them cannot
 * be read: a sum without it would be an area no room adds up to.
 */
function readRoomSpaces(mapping: OfferMapping): number | null {
  const spaces = childrenNamed(mapping.offer, 'room-space').map((element) => readAreaElement(mapping, element, 'room-space', 'кв. м'))
  if (spaces.length === 0 || spaces.includes(null)) return null
  return spaces.reduce<number>((sum, space) => sum + space!, 0)
}

function readAreas(mapping: OfferMapping, category: Category): Areas {
  // A room's own area is what is sold; the flat's total stays in the description.
  // Areas are kept to a hundredth of a m²: two decimals of m², four of sotkas for the land.
  const keep = (attribute: string, value: number | null, field: string) => {
    if (value !== null) mapping.attribute(attribute, value, field, String(asKept(attribute, value)))
  }
  const roomSpace = category.room ? readRoomSpaces(mapping) : null
  const total = roomSpace ?? readArea(mapping, 'area', 'кв. м')
  keep('area', total, category.room && roomSpace !== null ? 'room-space/value' : 'area/value')
  if (!category.room) {
    keep('living_area', readArea(mapping, 'living-space', 'кв. м'), 'living-space/value')
    keep('kitchen_area', readArea(mapping, 'kitchen-space', 'кв. м'), 'kitchen-space/value')
  }
  const lot = readArea(mapping, 'lot-area', 'сотка')
  keep('area_land', lot === null ? null : lot / 100, 'lot-area/value')
  return { total, lot }
}

/**
 * What `<price>` says, judged as far as it can be without the category: its value, a positive
 * number; its currency, the local one (a feed that leaves it out means that one); its unit, if
 * any, one of area (its factor to m²). Null when it is refused for one of them.
 */
function readPriceTerms(
  mapping: OfferMapping,
  country: string | undefined | null,
): { raw: string; value: number; unit: { text: string; factor: number } | null } | null {
  const raw = mapping.text('price/value')
  if (raw === null) return mapping.refuse('missing_price', 'price/value', 'Не указана цена (элемент <price><value>).')
  const value = readNumber(raw)
  if (value === null || value <= 0) return mapping.refuse('invalid_price', 'price/value', `Цена ${quoted(raw)} — не положительное число.`)
  const currency = mapping.text('price/currency')
  if (currency !== null && country !== null) {
    const local = localCurrency(country ?? 'RU')
    if (local === undefined || !local.names.has(fold(currency))) {
      const instead = local === undefined ? 'в валюте страны города, без элемента <currency>' : local.inWords
      return mapping.refuse('unsupported_currency', 'price/currency', `Валюта ${quoted(currency)} не поддерживается: укажите цену ${instead}.`)
    }
  }
  const unit = mapping.text('price/unit')
  if (unit === null) return { raw, value, unit: null }
  const factor = AREA_UNITS[fold(unit)]
  if (factor === undefined) {
    return mapping.refuse('invalid_price', 'price/unit', `Единица цены ${quoted(unit)} не распознана: ожидается «кв. м», «сотка» или «гектар».`)
  }
  return { raw, value, unit: { text: unit, factor } }
}

function readPrice(mapping: OfferMapping, areas: Areas, isLand: boolean, country: string | undefined | null): number | null {
  const terms = readPriceTerms(mapping, country)
  if (terms === null) return null
  const { raw, value, unit } = terms
  let total = value
  if (unit !== null) {
    const { text, factor } = unit
    // The MLS keeps the price of the whole object: a price per unit is multiplied by the area.
    // Per m² is per m² of the building, or of the land for a lot (which has no building). A
    // house's land is not its floor space: a house priced per m² without <area> is refused.
    const perSquareMetre = factor === 1
    const lotInUnits = areas.lot === null ? null : areas.lot / factor
    const area = !perSquareMetre ? lotInUnits : isLand ? (lotInUnits ?? areas.total) : areas.total
    if (area === null) {
      const missing = !perSquareMetre || isLand ? 'площади участка (<lot-area>)' : 'площади (<area>)'
      return mapping.refuse(
        'price_unit_without_area',
        'price/unit',
        `Цена указана за ${quoted(text)}, но у объявления нет ${missing}, чтобы посчитать цену целиком.`,
      )
    }
    total = value * area
  }
  total = round2(total)
  if (total <= 0 || total > MAX_PRICE) return mapping.refuse('invalid_price', 'price/value', `Цена ${quoted(raw)} вне допустимых пределов.`)
  return total
}

function readLocation(
  mapping: OfferMapping,
  places: FeedPlaces,
): { location: NonNullable<PropertySubmission['location']>; country: string | undefined } | null {
  const localityName = mapping.text('location/locality-name')
  const city = localityName === null ? null : places.cityByName(localityName, mapping.text('location/region'))
  if (!city) {
    return mapping.refuse(
      'unknown_locality',
      'location/locality-name',
      localityName === null
        ? 'Не указан населённый пункт (элемент <location><locality-name>).'
        : `Населённый пункт ${quoted(localityName)} не найден в справочнике городов MLS (GET /cities).`,
    )
  }
  let districtId: number | null = null
  const subLocality = mapping.text('location/sub-locality-name')
  if (subLocality !== null) {
    const district = places.districtByName(city.id, subLocality)
    if (district) districtId = district.id
    else {
      mapping.problem(
        'unknown_sub_locality',
        'location/sub-locality-name',
        `Район ${quoted(subLocality)} не найден среди районов города ${city.name} (GET /districts); объект загружен без района.`,
      )
    }
  }
  const location: NonNullable<PropertySubmission['location']> = { city_id: city.id, district_id: districtId }
  const address = mapping.text('location/address')
  if (address !== null) location.address = fitText(mapping, 'location/address', address, MAX_ADDRESS, 'Адрес')
  const apartment = mapping.text('location/apartment')
  if (apartment !== null) location.apartment_number = fitText(mapping, 'location/apartment', apartment, MAX_APARTMENT, 'Номер квартиры')
  const latitudeText = mapping.text('location/latitude')
  const longitudeText = mapping.text('location/longitude')
  if (latitudeText !== null && longitudeText !== null) {
    const latitude = readNumber(latitudeText)
    const longitude = readNumber(longitudeText)
    if (latitude === null || longitude === null || Math.abs(latitude) > 90 || Math.abs(longitude) > 180) {
      mapping.unknownValue('location/latitude', `${latitudeText}, ${longitudeText}`, 'широта от −90 до 90 и долгота от −180 до 180')
    } else {
      location.latitude = latitude
      location.longitude = longitude
    }
  } else if (latitudeText !== null || longitudeText !== null) {
    // One coordinate places the listing on no map: left out, and said.
    const [given, missing] = latitudeText !== null ? ['location/latitude', 'долготы (<longitude>)'] : ['location/longitude', 'широты (<latitude>)']
    mapping.problem('unknown_value', given, `Координата без ${missing} не задаёт точку на карте; она пропущена.`)
  }
  return { location, country: city.country }
}

/** The text, or its first `limit` characters (counted as the API's schemas count them: code points, so an emoji is one and is never cut in half). */
function fitText(mapping: OfferMapping, field: string, text: string, limit: number, what: string): string {
  // Never more characters than UTF-16 units: most texts are decided without splitting them.
  if (text.length <= limit) return text
  const characters = [...text]
  if (characters.length <= limit) return text
  mapping.problem('value_truncated', field, `${what} длиннее ${limit} символов; сохранены первые ${limit}.`)
  return characters.slice(0, limit).join('')
}

function readInteger(mapping: OfferMapping, path: string, attribute: string): void {
  const raw = mapping.text(path)
  if (raw === null) return
  const value = readNumber(raw)
  if (value === null || !Number.isInteger(value)) return mapping.unknownValue(path, raw, 'целое число')
  mapping.attribute(attribute, value, path, raw)
}

function readFromTable(mapping: OfferMapping, path: string, attribute: string, table: Record<string, string>, expected: string): void {
  const raw = mapping.text(path)
  if (raw === null) return
  const value = table[fold(raw)]
  if (value === undefined) return mapping.unknownValue(path, raw, expected)
  mapping.attribute(attribute, value, path, raw)
}

function readFlag(mapping: OfferMapping, path: string, attribute: string): void {
  const raw = mapping.text(path)
  if (raw === null) return
  const value = readBool(raw)
  if (value === null) return mapping.unknownValue(path, raw, '«да» или «нет»')
  mapping.attribute(attribute, value, path, raw)
}

function readBuilding(mapping: OfferMapping, category: Category): void {
  if (category.room) {
    // The rooms sold, not the flat's: a buyer looking for one room finds a one-room offer.
    const offered = mapping.text('rooms-offered')
    if (offered !== null) readInteger(mapping, 'rooms-offered', 'rooms')
    else mapping.attribute('rooms', 1, 'rooms-offered', '1')
  } else {
    readInteger(mapping, 'rooms', 'rooms')
  }
  readInteger(mapping, 'floor', 'floor')
  readInteger(mapping, 'floors-total', 'total_floors')
  readInteger(mapping, 'built-year', 'year_built')

  const buildingType = mapping.text('building-type')
  if (buildingType !== null) {
    const folded = fold(buildingType)
    const type = BUILDING_TYPES[folded]
    const wall = category.type === 'Дом' || category.type === 'Таунхаус' ? WALL_MATERIALS[folded] : undefined
    if (type) mapping.attribute('building_type', type, 'building-type', buildingType)
    if (wall) mapping.attribute('wall_material', wall, 'building-type', buildingType)
    if (!type && !wall) mapping.unknownValue('building-type', buildingType, '«панельный», «кирпичный», «монолит» или «деревянный»')
  }

  readFromTable(mapping, 'renovation', 'condition', CONDITIONS, '«дизайнерский», «евро», «хороший», «требует ремонта» и т. п.')

  const ceiling = mapping.text('ceiling-height')
  if (ceiling !== null) {
    const metres = readNumber(ceiling)
    // CRMs that keep centimetres write 270 for 2.7 m.
    const height = metres === null ? null : metres >= 100 && metres <= 1000 ? metres / 100 : metres
    if (height === null || height <= 0 || height > 20) mapping.unknownValue('ceiling-height', ceiling, 'высота в метрах, например «2.7»')
    else mapping.attribute('ceiling_height', height, 'ceiling-height', ceiling)
  }

  if (category.type === 'Коммерция') {
    readFromTable(mapping, 'commercial-type', 'commercial_type', COMMERCIAL_TYPES, '«офис», «торговое помещение», «склад» или «производство»')
  }
  readFromTable(mapping, 'lot-type', 'land_category', LAND_CATEGORIES, '«ИЖС», «садоводство» или «ЛПХ»')
}

function readAmenities(mapping: OfferMapping, category: Category): void {
  const balcony = mapping.text('balcony')
  if (balcony !== null) {
    const folded = fold(balcony)
    // "2 лоджии", "балкон и лоджия": the catalogue keeps one kind; a loggia is the larger.
    const kind =
      readBool(balcony) === false
        ? 'Нет'
        : /лодж|loggia/.test(folded)
          ? 'Лоджия'
          : /террас|terrace/.test(folded)
            ? 'Терраса'
            : /балкон|balcony/.test(folded)
              ? 'Балкон'
              : null
    if (kind) mapping.attribute('balcony', kind, 'balcony', balcony)
    else mapping.unknownValue('balcony', balcony, '«балкон», «лоджия», «терраса» или «нет»')
  }

  const bathroom = mapping.text('bathroom-unit')
  if (bathroom !== null) {
    const kind = BATHROOMS[fold(bathroom)]
    const count = readNumber(bathroom)
    if (kind) mapping.attribute('bathroom', kind, 'bathroom-unit', bathroom)
    else if (count !== null && Number.isInteger(count)) mapping.attribute('bathroom_count', count, 'bathroom-unit', bathroom)
    else mapping.unknownValue('bathroom-unit', bathroom, '«совмещённый», «раздельный» или число санузлов')
  }

  readFlag(mapping, 'lift', 'elevator')
  readFlag(mapping, 'phone', 'phone')
  readFlag(mapping, 'security', 'security')
  readFlag(mapping, 'alarm', 'security_alarm')
  readFlag(mapping, 'kitchen-furniture', 'built_in_kitchen')

  const roomsType = mapping.text('rooms-type')
  if (roomsType !== null && !category.room) {
    const folded = fold(roomsType)
    if (/^(раздельные|separate|isolated)$/.test(folded)) mapping.attribute('isolated_rooms', true, 'rooms-type', roomsType)
    else if (/^(смежные|adjacent)$/.test(folded)) mapping.attribute('isolated_rooms', false, 'rooms-type', roomsType)
    else mapping.unknownValue('rooms-type', roomsType, '«раздельные» или «смежные»')
  }

  const furnitureField = mapping.text('room-furniture') !== null ? 'room-furniture' : 'furniture'
  const furniture = mapping.text(furnitureField)
  if (furniture !== null) {
    const folded = fold(furniture)
    const yes = readBool(furniture)
    const kind =
      yes === true ? 'Полная' : yes === false ? 'Без мебели' : /частич|partial/.test(folded) ? 'Частично' : /полн|full/.test(folded) ? 'Полная' : null
    if (kind) mapping.attribute('furniture', kind, furnitureField, furniture)
    else mapping.unknownValue(furnitureField, furniture, '«да», «нет» или «частично»')
  }

  // Yes-or-no in the format, a kind in the catalogue: "нет" maps, "да" says too little to choose a kind.
  kindOrNone(mapping, 'parking', 'parking', PARKING_KINDS, 'Нет')
  const parkingKind = mapping.text('parking-type')
  if (parkingKind !== null && mapping.attributes.parking === undefined) {
    readFromTable(mapping, 'parking-type', 'parking', PARKING_KINDS, '«подземная», «наземная» или «во дворе»')
  }
  readInteger(mapping, 'parking-places', 'parking_count')
  kindOrNone(mapping, 'internet', 'internet', INTERNET_KINDS, 'Нет')

  const electricity = mapping.text('electricity-supply')
  if (electricity !== null) {
    const yes = readBool(electricity)
    if (yes === null) mapping.unknownValue('electricity-supply', electricity, '«да» или «нет»')
    else mapping.attribute('electricity', yes ? 'Есть' : 'Нет', 'electricity-supply', electricity)
  }
  kindOrNone(mapping, 'gas-supply', 'gas', { газгольдер: 'Газгольдер', баллон: 'Баллон', центральный: 'Центральный' }, 'Нет')
  kindOrNone(
    mapping,
    'water-supply',
    'water',
    { центральное: 'Центральное', центральный: 'Центральное', скважина: 'Скважина/колодец', колодец: 'Скважина/колодец' },
    'Нет',
  )
  kindOrNone(mapping, 'sewerage-supply', 'sewage', { центральная: 'Центральная', септик: 'Септик' }, 'Нет')
  kindOrNone(mapping, 'heating-supply', 'heating_type', { центральное: 'Центральное', автономное: 'Автономное' }, 'Нет')
}

/**
 * An element that the format makes yes-or-no and the catalogue a kind: "нет" is the
 * catalogue's none, a kind's name is that kind, and a bare "да" is left out without a word
 * (the offer said nothing wrong; the catalogue just needs more than it said).
 */
function kindOrNone(mapping: OfferMapping, path: string, attribute: string, kinds: Record<string, string>, none: string): void {
  const raw = mapping.text(path)
  if (raw === null) return
  const yes = readBool(raw)
  if (yes === true) return
  const kind = yes === false ? none : kinds[fold(raw)]
  if (kind === undefined) return mapping.unknownValue(path, raw, `«да», «нет» или вид: ${Object.keys(kinds).join(', ')}`)
  mapping.attribute(attribute, kind, path, raw)
}

function readOwner(mapping: OfferMapping, agencyCountry: CountryCode): PropertySubmission['owner'] {
  const agent = child(mapping.offer, 'sales-agent')
  if (!agent) return null
  const name = textAt(agent, 'name') ?? textAt(agent, 'organization')
  const phone = childrenNamed(agent, 'phone')
    .map((element) => element.text.trim())
    .find((text) => text !== '')
  if (!phone || !name) {
    mapping.problem(
      'incomplete_sales_agent',
      phone ? 'sales-agent/name' : 'sales-agent/phone',
      phone
        ? 'У агента (<sales-agent>) нет ни имени, ни организации; объект загружен без собственника.'
        : 'У агента (<sales-agent>) не указан телефон; объект загружен без собственника.',
    )
    return null
  }
  // Read as the listings service will read it, in the agency's country: a number it would refuse
  // costs the listing its owner, not the whole offer.
  if (!normalisePhone(phone, agencyCountry)) {
    mapping.problem('invalid_phone', 'sales-agent/phone', `Телефон ${quoted(phone)} не распознан как номер телефона; объект загружен без собственника.`)
    return null
  }
  const nameField = textAt(agent, 'name') === null ? 'sales-agent/organization' : 'sales-agent/name'
  return { name: fitText(mapping, nameField, name, MAX_OWNER_NAME, 'Имя агента'), phone }
}

function readDescription(mapping: OfferMapping): string | null {
  const description = mapping.text('description')
  return description === null ? null : fitText(mapping, 'description', description, MAX_DESCRIPTION, 'Описание')
}

function readImages(mapping: OfferMapping, offer: XmlElement): string[] {
  const urls: string[] = []
  for (const image of childrenNamed(offer, 'image')) {
    const raw = image.text.trim()
    if (raw === '') continue
    let url: URL | null = null
    try {
      url = new URL(raw)
    } catch {
      url = null
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || raw.length > 2048) {
      mapping.problem('invalid_image_url', 'image', `Адрес фотографии ${quoted(raw)} — не ссылка http(s); фотография пропущена.`)
      continue
    }
    if (!urls.includes(raw)) urls.push(raw)
  }
  return urls
}
