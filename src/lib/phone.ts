import { getCountries, getCountryCallingCode, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max'
import { remembered } from './remembered.js'
import { trimmedText } from './text.js'

const supportedCountries = new Set<string>(getCountries())

/** True for ISO 3166-1 alpha-2 codes whose phone numbering we know (drives normalisation). */
export function isSupportedCountry(country: string): country is CountryCode {
  return supportedCountries.has(country)
}

/**
 * Phones normalised lately, by country and text (`RU:8 912 …`; the codes are two letters):
 * parsing is most of what an owner costs, and the same text comes back (a feed's offer is
 * checked, then submitted; an agency's agents recur).
 */
const normaliseRemembered = remembered((key) => parsePhone(key.slice(3), key.slice(0, 2) as CountryCode), 10_000, 67)

/**
 * Turns a phone written any usual way into the international form the API stores and shows,
 * reading national numbers as the given country's. A number of ten national digits, the
 * pattern's 3 + 3 + 2 + 2, takes that form in every country: `8 (912) 345-67-89` →
 * `+7 912 345-67-89`, `(212) 736-5000` in the US → `+1 212 736-50-00`. The pattern cannot
 * hold other lengths; those get libphonenumber's international form (`+49 30 1234567`).
 * Written nationally or internationally, one number gives one form: it identifies the owner.
 * An extension is kept, written `доб.`: `8 (912) 111-22-33 ext. 5` → `+7 912 111-22-33 доб. 5`.
 * Returns null for what cannot be a number of the country (letters, too few or too many
 * digits). The operators' ranges are not checked: the interface turns any 11-digit number
 * starting with 8 into the +7 form, `8 (123) 456-78-90` included.
 */
export function normalisePhone(raw: string, country: CountryCode): string | null {
  // A number pasted from a spreadsheet or a chat brings a line break or a zero-width space along.
  return normaliseRemembered(`${country}:${trimmedText(raw)}`)
}

function parsePhone(raw: string, country: CountryCode): string | null {
  // The whole text must be the number: libphonenumber otherwise finds one inside any sentence
  // ("email me 89123456789@x.ru").
  let parsed = parsePhoneNumberFromString(raw, { defaultCountry: country, extract: false })
  if (!parsed?.isPossible()) {
    // Written with the country's code but no plus ("7 912 345-67-89"): libphonenumber takes the
    // code off only where the rest is a number of that very country, so a Kazakh agency's Russian
    // number, code 7 as its own, would be refused where a Russian agency's Kazakh one is not.
    const international = parsePhoneNumberFromString(`+${raw}`, { extract: false })
    if (international?.countryCallingCode !== getCountryCallingCode(country)) return null
    parsed = international
  }
  if (!parsed.isPossible()) return null
  const national = parsed.nationalNumber
  // Ten digits take the interface's form whatever the operator (below). Any other length must
  // be a number the country has: its possible lengths alone let a Russian number with four
  // digits too many through (14 digits, which only 8 800-style numbers have).
  if (national.length !== 10 && !parsed.isValid()) return null
  // An extension (`доб. 5`, `ext. 5`, `#5`) is part of the number: without it, an office's
  // extension would be taken for the office itself, another owner.
  const extension = parsed.ext ? ` доб. ${parsed.ext}` : ''
  if (national.length !== 10) return `${parsed.formatInternational({ formatExtension: (number) => number })}${extension}`
  return `+${parsed.countryCallingCode} ${national.slice(0, 3)} ${national.slice(3, 6)}-${national.slice(6, 8)}-${national.slice(8)}${extension}`
}
