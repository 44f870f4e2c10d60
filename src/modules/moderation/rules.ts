import { findPhoneNumbersInText, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max'
import type { ModerationReason, PropertyRow } from '../../db/schema.js'
import { AREA_DECIMALS, attributesByName, type PropertyTypeName } from '../reference/attribute-catalogue.js'

export interface ListingUnderCheck {
  listing: PropertyRow
  propertyType: PropertyTypeName
  /** The agency's country, for recognising phone numbers written the national way. */
  country: CountryCode
  /** The owner's stored phone, looked for in the description however it is written there. */
  ownerPhone: string | null
  /** Whether the agency already has the same offer live (see hasLiveDuplicate). */
  hasDuplicate: boolean
}

// Each address is looked for from where its local part starts (the lookbehind): tried from
// every character of a long run of them, "1-1-1-…" or "a.a.a.…", the search took a quadratic
// half second for a description of 10,000 characters.
const EMAIL = /(?<![\p{L}\p{N}._%+-])[\p{L}\p{N}._%+-]+\s*@\s*[\p{L}\p{N}.-]+\.\p{L}{2,}/u
// An address with its @ or dots spelled out to slip past the pattern above ("ivan (at) mail
// dot ru", "ivan собака mail.ru", "ivan@mail[dot]ru"). Addresses are written in Latin letters,
// and asking for them keeps Russian prose ("собака лайка.Рядом") from looking like one; a bare
// "at" is left out, English prose has too many ("look at home.Nice").
const SPELLED_AT = String.raw`\s*@\s*|\s*[(\[{]\s*(?:at|собака)\s*[)\]}]\s*|\s+собака\s+`
const SPELLED_DOT = String.raw`\.|\s*[(\[{]\s*(?:dot|точка)\s*[)\]}]\s*|\s+(?:dot|точка)\s+`
const SPELLED_EMAIL = new RegExp(
  String.raw`(?<![a-z0-9._%+-])[a-z0-9._%+-]+(?:${SPELLED_AT})[a-z0-9-]+(?:(?:${SPELLED_DOT})[a-z0-9-]+)*(?:${SPELLED_DOT})[a-z]{2,}`,
  'i',
)
// A bare "at" is an @ where the domain after it has its dot spelled too ("ivan at mail dot ru"),
// or where the domain is a mail service's ("ivan at yandex.ru"); an @ is one with blanks round
// the domain's dot ("ivan @ mail . ru"): none of them is prose.
const BARE_AT_EMAIL = /(?<![a-z0-9._%+-])[a-z0-9._%+-]+\s+at\s+[a-z0-9-]+(?:\s+(?:dot|точка)\s+[a-z0-9-]+)*\s+(?:dot|точка)\s+[a-z]{2,}/i
const MAIL_SERVICE = String.raw`(?:yandex|ya|mail|gmail|googlemail|bk|inbox|list|internet|rambler|icloud|me|outlook|hotmail|live|yahoo|proton|protonmail|pm|ukr|tut|gmx|aol|zoho)`
const AT_MAIL_SERVICE = new RegExp(String.raw`(?<![a-z0-9._%+-])[a-z0-9._%+-]+\s+at\s+${MAIL_SERVICE}\.(?:ru|com|net|me|ua|by|kz|de|su)(?![\p{L}\p{N}])`, 'iu')
// A blank after the dot alone is a sentence's end ("Loft @Home. Premium класс") unless what
// follows is a mail domain's ending ("anna@mail. ru").
const SPACED_DOT_EMAIL =
  /(?<![a-z0-9._%+-])[a-z0-9._%+-]+\s*@\s*[a-z0-9-]+(?:\s*\.\s*[a-z0-9-]+)*(?:\s+\.\s*[a-z]{2,}|\s*\.\s+(?:ru|su|com|net|org|info|biz|me|io|kz|by|ua|рф)(?![\p{L}\p{N}]))/iu
// Ten or more digits in a row, whatever separates them: a phone number written to slip past
// a parser ("8 9I2..." aside). A price ("8 500 000") or an area has fewer; two of them, or a
// price of billions, may not, so a run that reads as amounts and dates joined by brackets,
// dashes, slashes or commas is not taken for one: "12 500 000 (250 000 за м²)", "8 500 000 -
// 300 000", "10.06.2024 - 20.06.2024", "1 250 000 000". A phone's groups of two or three
// digits are no amounts: "8 (912) 345-67-89", "8,999,111,22,33" and "8/999/111/22/33" are runs,
// as are groups joined by anything else that is no letter ("8•912•345•67•89", "8;912;…").
const DIGIT_RUN = /(?:\d[\s\-()._*,/|~:;+•·'"#°=\\<>{}[\]]*){10,}/g
// Colons join digits in a phone ("8:999:111:22:33") as in a cadastral number or quarter
// (50:20:0010336:1234), which is taken out of the text first: its shape is no phone's. Times of
// day (10:00, 10.00) are read among the amounts (readsAsAmounts), so the digits round them count.
const CADASTRAL = /(?<![\d:])\d{2}:\d{2}:\d{6,7}(?::\d{1,9})?(?![\d:])/g
// A run that reads as no amounts is a phone when some of its numbers, as written and one after
// the other, make ten to twelve digits that are a valid number of the agency's country or of its
// neighbours, read the national way: "8 (912) 345-67-89", "8,999,111,22,33", "380 50 123 45 67".
// A list of areas ("19,5 / 14,2 / 12,1 / 9,8"), of bus routes ("№ 9, 12, 45, 127, 800") or a bank
// account of twenty digits makes none: digits from the middle of a written number are never the
// start or the end of a phone. With a "+" put before them, a list of small numbers too often
// makes some country's number. Reading a number takes some microseconds, so a description is
// read up to a bound, far above what honest lists need; numbers past it are taken for a phone
// hidden in padding.
const MOST_NUMBERS_READ = 2_000
/** Whose numbers are looked for besides the agency's own country's: the countries whose numbers a listing here is likeliest to give. */
const NEIGHBOURS: readonly CountryCode[] = ['RU', 'BY', 'KZ', 'UA']
function hasHiddenPhone(text: string, country: CountryCode): boolean {
  const countries = [...new Set([country, ...NEIGHBOURS])]
  let numbersLeft = MOST_NUMBERS_READ
  const isPhone = (digits: string) => countries.some((region) => --numbersLeft < 0 || parsePhoneNumberFromString(digits, region)?.isValid() === true)
  const holdsPhone = (numbers: readonly string[]) =>
    numbers.some((_, first) => {
      let digits = ''
      for (const number of numbers.slice(first)) {
        digits += number
        if (digits.length > 12) return false
        if (digits.length >= 10 && isPhone(digits)) return true
      }
      return false
    })
  return [...text.replace(CADASTRAL, ' кн ').matchAll(DIGIT_RUN)].some(
    ([run]) => !readsAsAmounts(run) && !isNumberedList(run) && holdsPhone(run.match(/\d+/g)!),
  )
}
/**
 * Whether a run is a list of three items or more, a comma or a semicolon and a blank between
 * them, that only a list is: whole numbers going up (`№ 86, 89, 108, 113, 126`, flats or routes)
 * or floors of their buildings (`8/20, 6/23, 12/17`).
 */
function isNumberedList(run: string): boolean {
  const items = run.replace(/\D+$/, '').split(/\s*[,;]\s+/)
  if (items.length < 3) return false
  if (items.every((item) => /^\d{1,4}$/.test(item))) return items.every((item, k) => k === 0 || Number(item) > Number(items[k - 1]))
  return items.every((item) => {
    const floors = /^(\d{1,2})\/(\d{1,3})$/.exec(item)
    return floors !== null && Number(floors[1]) <= Number(floors[2])
  })
}

/**
 * One amount in thousands, all its groups of three split alike, with kopecks or not: `12 500 000`,
 * `4 950 000 000`, `9.500.000.000,00`. A price of billions is written in round thousands; a
 * mobile split in threes from the right (`9 123 456 789`) is not.
 */
const ONE_GROUPED_AMOUNT = /^\d{1,3}([ .,])\d{3}(?:(?:\1\d{3})?|(?:\1\d{3})*\1(?:000))(?:[.,]\d{1,2})?$/
/** What may join two amounts: brackets, dashes, slashes, bars, tildes, commas or semicolons, with blanks (two tests, each linear). */
const isJoiner = (separator: string) => /^[\s\-()/,|~;]+$/.test(separator) && /[-()/,|~;]/.test(separator)

/**
 * Whether a run of DIGIT_RUN reads as amounts and dates, each one of: a date (`10.06.2024`,
 * `1.6.24`) with its time or not (`15.06.2024 10:00`), a pair of coordinates in degrees
 * (`55.755826, 37.617300`: each to 180, with four to eight decimals), a range of numbers as
 * an item of a list (`91-95, 123-127`), a day and month (`25.07`), a number with a decimal or
 * two in a list joined otherwise (`22,9 / 13,2`), a time of day (`10:00`, `10.00`: hours to
 * 23, minutes to 59), thousands in groups of three (`12 500 000`, `1.250.000`, `5,500,000`; billions
 * in round thousands), or four to nine
 * digits (`2015`, `12500000`), each with decimals (`,00`) or not, joined by a joiner, blanks or
 * separators after the last. Read left to right in one way only: a pattern that could split the
 * run in many ways took time exponential in its length.
 */
function readsAsAmounts(run: string): boolean {
  const parts = run.match(/\d+|\D+/g)!
  const digitsAt = (i: number) => (parts[i] !== undefined && /^\d/.test(parts[i]) ? parts[i].length : 0)
  const isTimeAt = (i: number) =>
    digitsAt(i) >= 1 &&
    digitsAt(i) <= 2 &&
    Number(parts[i]) <= 23 &&
    (parts[i + 1] === ':' || parts[i + 1] === '.') &&
    digitsAt(i + 2) === 2 &&
    Number(parts[i + 2]) <= 59
  const isCoordinateAt = (i: number) =>
    digitsAt(i) >= 1 &&
    digitsAt(i) <= 3 &&
    Number(parts[i]) <= 180 &&
    (parts[i + 1] === '.' || parts[i + 1] === ',') &&
    digitsAt(i + 2) >= 4 &&
    digitsAt(i + 2) <= 8
  // A range of flat or house numbers as an item of a list ("91-95, 123-127"): its ends of one
  // length, the second the greater, and a comma or the run's edge on either side. Inside a
  // phone ("912 345-67-89") the groups round a dash are joined by no comma.
  const isListedRangeAt = (i: number) =>
    digitsAt(i) >= 1 &&
    digitsAt(i) <= 3 &&
    /^\s*-\s*$/.test(parts[i + 1] ?? '') &&
    digitsAt(i + 2) === digitsAt(i) &&
    Number(parts[i + 2]) > Number(parts[i]) &&
    (i === 0 || parts[i - 1]!.includes(',')) &&
    (i + 3 >= parts.length - 1 || parts[i + 3]!.includes(','))
  // A day and month without the year ("01.07-10.07, 25.07-31.07", a rental's free dates).
  const isDayMonthAt = (i: number) =>
    digitsAt(i) >= 1 &&
    digitsAt(i) <= 2 &&
    Number(parts[i]) >= 1 &&
    Number(parts[i]) <= 31 &&
    parts[i + 1] === '.' &&
    digitsAt(i + 2) === 2 &&
    Number(parts[i + 2]) >= 1 &&
    Number(parts[i + 2]) <= 12
  // A number with a decimal or two as an item of a list whose items are joined otherwise than
  // by its own point or comma ("22,9 / 13,2 / 12,3 м²", "2,75; 3,00"): "8,99,91,11,22,33" is none.
  const isListJoiner = (separator: string | undefined) => separator === undefined || /[\s/;|]/.test(separator)
  const isListedDecimalAt = (i: number) =>
    digitsAt(i) >= 1 &&
    digitsAt(i) <= 3 &&
    (parts[i + 1] === '.' || parts[i + 1] === ',') &&
    digitsAt(i + 2) >= 1 &&
    digitsAt(i + 2) <= 2 &&
    isListJoiner(parts[i - 1]) &&
    isListJoiner(parts[i + 3])
  let i = 0
  while (i < parts.length) {
    const digits = digitsAt(i)
    if (digits <= 2 && parts[i + 1] === '.' && digitsAt(i + 2) >= 1 && digitsAt(i + 2) <= 2 && parts[i + 3] === '.' && [2, 4].includes(digitsAt(i + 4))) {
      i += 5
      if (parts[i] !== undefined && /^\s+$/.test(parts[i]!) && isTimeAt(i + 1)) i += 4
    } else if (isCoordinateAt(i) && /^[,;]?\s*$/.test(parts[i + 3] ?? '') && isCoordinateAt(i + 4)) {
      // A latitude and a longitude, whole: nothing follows them as their decimals.
      i += 7
      if (i >= parts.length - 1) return true
      if (!isJoiner(parts[i]!)) return false
      i += 1
      continue
    } else if (isListedRangeAt(i) || isTimeAt(i) || isDayMonthAt(i) || isListedDecimalAt(i)) {
      i += 3
    } else if (digits <= 3 && [' ', '.', ','].includes(parts[i + 1] ?? '') && digitsAt(i + 2) === 3) {
      const separator = parts[i + 1]
      let groups = 1
      i += 1
      while (parts[i] === separator && digitsAt(i + 1) === 3) {
        i += 2
        groups++
      }
      // Billions are written in round thousands (see ONE_GROUPED_AMOUNT).
      if (groups >= 4 && parts[i - 1] !== '000') return false
    } else if (digits >= 4 && digits <= 9) {
      i += 1
    } else {
      return false
    }
    if ((parts[i] === '.' || parts[i] === ',') && digitsAt(i + 1) >= 1 && digitsAt(i + 1) <= 2) i += 2
    // What follows the last amount is the run's end; between two, a joiner.
    if (i >= parts.length - 1) return true
    if (!isJoiner(parts[i]!)) return false
    i += 1
  }
  return true
}
// Messenger contacts, as much contacts as a phone: a link that opens a chat or a profile
// (t.me/…, wa.me/…, vk.com/…); a handle named with its messenger ("telegram @ivan",
// "tg: ivanrealty", "инстаграм @ivan"); or an @handle that only a handle looks like, with a
// digit or an underscore (Telegram's and Instagram's are 5 to 32 characters). A bare "@Tower"
// is left alone: complexes and shops are written that way ("ЖК @Home", "ЖК «@Residence»").
const CHAT_LINK = /\b(?:t\.me|telegram\.me|wa\.me|vk\.me|vk\.com|instagram\.com|viber\.click)\s*\/\s*[\p{L}\p{N}_+]/iu
const NAMED_HANDLE =
  /(?<![\p{L}\p{N}_])(?:telegram|телеграм\p{L}*|tg|тг|whats\s?app|ватсап\p{L}*|viber|вайбер\p{L}*|instagram|инстаграм\p{L}*|insta|инста)(?![\p{L}\p{N}])\s*[:\-–—]?\s*@?[a-z][a-z0-9_.]{4,31}(?![\p{L}\p{N}@])/iu
const MARKED_HANDLE = /(?<![\p{L}\p{N}._%+-])@(?=[a-z0-9_.]*[0-9_])[a-z][a-z0-9_.]{4,31}(?![\p{L}\p{N}@])/iu

/**
 * The internal check (docs/api.md#the-internal-check): every rule that fails gives a reason with a stable code, the
 * field it concerns and a sentence for the agency. No reasons means the listing may be
 * published.
 */
export function checkListing({ listing, propertyType, country, ownerPhone, hasDuplicate }: ListingUnderCheck): ModerationReason[] {
  const reasons: ModerationReason[] = []
  const reason = (code: string, field: string | null, message: string) => reasons.push({ code, field, message })
  const attributes = listing.attributes

  if (listing.cityId === null) {
    reason('location_missing', 'location.city_id', 'The listing has no location: give at least location.city_id.')
  }
  if (listing.price === null) {
    reason('price_missing', 'price', 'The listing has no price.')
  } else if (listing.price <= 0) {
    reason('price_not_positive', 'price', 'The price must be greater than zero.')
  }

  const floor = attributes.floor
  const totalFloors = attributes.total_floors
  if (typeof floor === 'number' && typeof totalFloors === 'number' && floor > totalFloors) {
    reason('floor_above_total_floors', 'attributes.floor', `Floor ${floor} is above the building’s ${totalFloors} floors.`)
  }

  const { area, living_area: living, kitchen_area: kitchen } = attributes
  if (typeof area === 'number' && (typeof living === 'number' || typeof kitchen === 'number')) {
    // Summed in hundredths, the areas' precision: in binary fractions 32.2 + 8.1 is
    // 40.300000000000004, more than an area of 40.3 that they add up to exactly.
    const hundredths = (value: unknown) => (typeof value === 'number' ? Math.round(value * 10 ** AREA_DECIMALS) : 0)
    const parts = hundredths(living) + hundredths(kitchen)
    if (parts > hundredths(area)) {
      const shown = parts / 10 ** AREA_DECIMALS
      // Named by the part the listing has: living_area, or kitchen_area without it.
      const field = typeof living === 'number' ? 'attributes.living_area' : 'attributes.kitchen_area'
      reason('areas_exceed_total', field, `Living and kitchen areas (${shown} m²) add up to more than the total area (${area} m²).`)
    }
  }

  for (const name of Object.keys(attributes)) {
    const definition = attributesByName.get(name)
    if (definition && !definition.appliesTo.includes(propertyType)) {
      reason('attribute_not_applicable', `attributes.${name}`, `The attribute ${name} (${definition.meaning}) does not apply to ${propertyType}.`)
    }
  }

  if (descriptionHasContacts(listing.description, country, ownerPhone)) {
    reason(
      'contacts_in_description',
      'description',
      'The description contains a phone number, an e-mail address or a messenger contact; the public catalogue must not carry contacts.',
    )
  }

  if (hasDuplicate) {
    reason(
      'duplicate_listing',
      null,
      'The agency already has this offer live: same type, deal, area and place (address, street and house number, or coordinates), and no other flat or floor.',
    )
  }
  return reasons
}

const MIN_OWNER_DIGITS = 8

// A phone dictated in Russian words: "восемь девятьсот двенадцать триста сорок пять…" or
// "восемь-девять-один-…". Each group (hundreds, then tens, then units, each optional, or a number
// from 10 to 19) is read as the digits it says; ten or more digits in a run of such words are a phone.
const UNITS: Record<string, number> = {
  ноль: 0,
  нуль: 0,
  один: 1,
  одна: 1,
  два: 2,
  две: 2,
  три: 3,
  четыре: 4,
  пять: 5,
  шесть: 6,
  семь: 7,
  восемь: 8,
  девять: 9,
}
const TEENS: Record<string, number> = {
  десять: 10,
  одиннадцать: 11,
  двенадцать: 12,
  тринадцать: 13,
  четырнадцать: 14,
  пятнадцать: 15,
  шестнадцать: 16,
  семнадцать: 17,
  восемнадцать: 18,
  девятнадцать: 19,
}
const TENS: Record<string, number> = {
  двадцать: 20,
  тридцать: 30,
  сорок: 40,
  пятьдесят: 50,
  шестьдесят: 60,
  семьдесят: 70,
  восемьдесят: 80,
  девяносто: 90,
}
const HUNDREDS: Record<string, number> = {
  сто: 100,
  двести: 200,
  триста: 300,
  четыреста: 400,
  пятьсот: 500,
  шестьсот: 600,
  семьсот: 700,
  восемьсот: 800,
  девятьсот: 900,
}
// The longer words first ("семьсот" before "семь"), each a whole word.
const NUMBER_WORD = String.raw`(?:${[...Object.keys(HUNDREDS), ...Object.keys(TENS), ...Object.keys(TEENS), ...Object.keys(UNITS)].join('|')})(?!\p{L})`
const NUMBER_WORD_RUN = new RegExp(String.raw`(?<!\p{L})${NUMBER_WORD}(?:[\s,.\-–—]+${NUMBER_WORD})*`, 'giu')

/** The digits a run of number words says, group by group ("девятьсот двенадцать" is 912). */
function spokenDigits(run: string): string {
  let digits = ''
  let group: number[] = []
  const flush = () => {
    if (group.length > 0) digits += String(group.reduce((sum, part) => sum + part, 0))
    group = []
  }
  for (const word of run
    .toLowerCase()
    .split(/[^\p{L}]+/u)
    .filter(Boolean)) {
    const last = group.at(-1)
    if (word in HUNDREDS) {
      flush()
      group.push(HUNDREDS[word]!)
    } else if (word in TENS) {
      if (last === undefined || last < 100) flush()
      group.push(TENS[word]!)
    } else if (word in TEENS) {
      if (last === undefined || last < 100) flush()
      group.push(TEENS[word]!)
      flush()
    } else {
      if (last === undefined || last % 10 !== 0 || last === 0) flush()
      group.push(UNITS[word]!)
      flush()
    }
  }
  flush()
  return digits
}

const hasSpokenPhone = (text: string) => [...text.matchAll(NUMBER_WORD_RUN)].some(([run]) => spokenDigits(run).length >= 10)

/**
 * A description as the rules read it: NFKC folds look-alike forms into the plain ones (a
 * full-width ＠ or ８ is an @ or an 8), the characters a reader never sees are dropped (a
 * zero-width space, a word joiner or a soft hyphen inside `ivan@mail.ru` leaves it as shown),
 * a digit of any script is read as the digit it is (`८` is 8, `➑` is 8), the braille blank
 * as a blank and the ideographic full stop as a dot.
 */
const asShown = (description: string) =>
  description
    .normalize('NFKC')
    .replace(/\p{Default_Ignorable_Code_Point}/gu, '')
    .replace(/[\u2776-\u2793]/gu, (digit) => String(((digit.codePointAt(0)! - 0x2776) % 10) + 1))
    .replace(/(?![0-9])\p{Nd}/gu, asciiDigit)
    .replace(/\u2800/gu, ' ')
    .replace(/\u3002/gu, '.')

/**
 * A decimal digit of another script as its ASCII digit. Unicode encodes each script's digits as
 * a run of ten from 0, so its value is its distance from the run's start, counted back.
 */
function asciiDigit(digit: string): string {
  let codePoint = digit.codePointAt(0)!
  let value = 0
  while (/\p{Nd}/u.test(String.fromCodePoint(codePoint - 1))) {
    codePoint--
    value++
  }
  return String(value % 10)
}

/**
 * Whether the description holds the owner's phone, its national digits written with anything
 * but letters between them ("8,912,345,67,89", "8/912/345/67/89"): whatever a pattern for
 * phones in general lets through, the owner's own number never reaches the catalogue.
 */
function containsPhone(description: string, phone: string | null): boolean {
  const national = phone && parsePhoneNumberFromString(phone)?.nationalNumber
  // A number as short as a price (some countries have 7 digits or fewer) is left to the rules above.
  if (!national || national.length < MIN_OWNER_DIGITS) return false
  return asShown(description)
    .split(/\p{L}+/u)
    .some((stretch) => stretch.replace(/\D/g, '').includes(national))
}

/** Whether a description holds contacts the public catalogue must never carry: the rule `contacts_in_description`. */
export function descriptionHasContacts(description: string | null, country: CountryCode, ownerPhone: string | null): boolean {
  return description !== null && (containsContacts(description, country) || containsPhone(description, ownerPhone))
}

function containsContacts(description: string, country: CountryCode): boolean {
  const text = asShown(description)
  return (
    EMAIL.test(text) ||
    SPELLED_EMAIL.test(text) ||
    BARE_AT_EMAIL.test(text) ||
    AT_MAIL_SERVICE.test(text) ||
    SPACED_DOT_EMAIL.test(text) ||
    CHAT_LINK.test(text) ||
    NAMED_HANDLE.test(text) ||
    MARKED_HANDLE.test(text) ||
    hasHiddenPhone(text, country) ||
    hasSpokenPhone(text) ||
    // libphonenumber reads a price of billions that starts like an area code or a mobile
    // range ("4 950 000 000", "7 000 000 000" in tenge) as a number. Only one amount in groups of
    // three is let through: "8 800 555-3535" reads as two amounts joined by a dash, and is a phone.
    findPhoneNumbersInText(text, country).some(({ startsAt, endsAt }) => !ONE_GROUPED_AMOUNT.test(text.slice(startsAt, endsAt)))
  )
}
