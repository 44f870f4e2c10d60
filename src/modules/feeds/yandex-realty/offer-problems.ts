/**
 * What the import says about an offer it refused or could not take whole. The codes are
 * stable, for agencies to act on; the messages are for a person, in Russian, in plain words.
 */

/** One finding about one offer; `field` is the offer's element path (`price/currency`), or null. */
export interface OfferProblem {
  internal_id: string
  code: string
  field: string | null
  message: string
}

interface OfferProblemCode {
  code: string
  /** A refusal: the offer is not imported (nothing of it is stored or changed). */
  refuses: boolean
  meaning: string
}

export const offerProblemCodes = [
  { code: 'missing_internal_id', refuses: true, meaning: 'The offer has no internal-id, so it cannot be matched to a listing.' },
  { code: 'invalid_internal_id', refuses: true, meaning: 'The internal-id is over 100 characters or holds control characters.' },
  { code: 'duplicate_internal_id', refuses: true, meaning: 'An earlier offer of the same file has the same internal-id; only the first is imported.' },
  { code: 'unknown_deal_type', refuses: true, meaning: '`type` is missing or is neither продажа/sale nor аренда/rent.' },
  { code: 'unsupported_rent_period', refuses: true, meaning: 'A rent whose `price/period` is neither a day nor a month.' },
  { code: 'unknown_category', refuses: true, meaning: '`category` is missing or names a kind of property the MLS does not list (a garage, a hostel bed…).' },
  { code: 'missing_price', refuses: true, meaning: 'The offer has no `price/value`.' },
  { code: 'invalid_price', refuses: true, meaning: '`price/value` is not a positive number, is too large, or its `unit` is unknown.' },
  {
    code: 'unsupported_currency',
    refuses: true,
    meaning: '`price/currency` is not the money of the city’s country: RUB or RUR in Russia, KZT in Kazakhstan, its ISO 4217 code elsewhere.',
  },
  { code: 'price_unit_without_area', refuses: true, meaning: 'The price is per m², sotka or hectare, but the offer gives no area to multiply it by.' },
  { code: 'unknown_locality', refuses: true, meaning: '`location/locality-name` is missing or is not one of the reference cities.' },
  {
    code: 'unknown_sub_locality',
    refuses: false,
    meaning: '`location/sub-locality-name` is not a district of the city; the listing is imported without a district.',
  },
  {
    code: 'unknown_value',
    refuses: false,
    meaning: 'A value the attribute catalogue cannot take (an unknown word, a number out of range); that attribute is left out.',
  },
  { code: 'not_applicable', refuses: false, meaning: 'A value that does not apply to the property type (a lot area on a flat); it is left out.' },
  {
    code: 'invalid_phone',
    refuses: false,
    meaning: 'The `sales-agent/phone` is not a phone number of the agency’s country; the listing is imported without its owner.',
  },
  {
    code: 'incomplete_sales_agent',
    refuses: false,
    meaning: '`sales-agent` has no phone, or neither a name nor an organization; the listing is imported without its owner.',
  },
  {
    code: 'value_truncated',
    refuses: false,
    meaning: 'The description, address, apartment number or agent’s name is longer than a listing keeps; it is cut to fit.',
  },
  { code: 'invalid_image_url', refuses: false, meaning: 'An `image` is not an http(s) URL; that photo is left out.' },
  { code: 'image_download_failed', refuses: false, meaning: 'A photo could not be downloaded or is not an image; the listing is imported without it.' },
] as const satisfies readonly OfferProblemCode[]

export type OfferProblemCodeName = (typeof offerProblemCodes)[number]['code']

const refusals = new Set<string>(offerProblemCodes.filter((entry) => entry.refuses).map((entry) => entry.code))

/** True when a problem with this code means the offer was not imported. */
export function isRefusal(code: string): boolean {
  return refusals.has(code)
}
