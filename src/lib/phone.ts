import { getCountries, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max'

const supportedCountries = new Set<string>(getCountries())

/** True for ISO 3166-1 alpha-2 codes whose phone numbering we know (drives normalisation). */
export function isSupportedCountry(country: string): country is CountryCode {
  return supportedCountries.has(country)
}

/**
 * Turns a phone written any usual way into the international form of interface §2.2,
 * reading national numbers as the given country's: for country code 7,
 * `8 (912) 345-67-89` → `+7 912 345-67-89`; other countries get libphonenumber's
 * international form (`+49 30 123456`). Returns null for a number that is not valid.
 */
export function normalisePhone(raw: string, country: CountryCode): string | null {
  const parsed = parsePhoneNumberFromString(raw, country)
  if (!parsed?.isValid()) return null
  const national = parsed.nationalNumber
  if (national.length === 10 && parsed.countryCallingCode === '7') {
    return `+7 ${national.slice(0, 3)} ${national.slice(3, 6)}-${national.slice(6, 8)}-${national.slice(8)}`
  }
  return parsed.formatInternational()
}
