import type { Static } from 'typebox'
import type { Database } from '../../db/client.js'
import { unpairedCoordinate } from '../../lib/coordinates.js'
import { ApiError, CITY_NOT_FOUND, DISTRICT_NOT_FOUND, RESIDENTIAL_COMPLEX_NOT_FOUND } from '../../lib/errors.js'
import { isSupportedCountry } from '../../lib/phone.js'
import { trimmedText } from '../../lib/text.js'
import { attributeCatalogue, boundsOf, type AttributeDefinition } from './attribute-catalogue.js'
import type { ReferenceNames } from './reference-names.js'
import * as repository from './reference.repository.js'
import type { CityCreateBody, DistrictCreateBody, ResidentialComplexCreateBody } from './reference.schemas.js'

/** The attribute catalogue as GET /attributes shows it; it never changes while the service runs. */
const attributes = attributeCatalogue.map((attribute) => ({
  name: attribute.name,
  type: attribute.type,
  allowed_values: attribute.allowedValues ? [...attribute.allowedValues] : null,
  meaning: attribute.meaning,
  ...numberRules(attribute),
  property_types: [...attribute.appliesTo],
}))

/** What a form needs to check a number before sending it, as the submission checks it (attributes.ts). */
function numberRules(attribute: AttributeDefinition): { min: number | null; max: number | null; decimals: number | null } {
  if (attribute.type !== 'number' && attribute.type !== 'integer') return { min: null, max: null, decimals: null }
  return { ...boundsOf(attribute), decimals: attribute.decimals ?? null }
}

function found<T>(row: T | undefined, detail: string): T {
  if (!row) throw ApiError.notFound(detail)
  return row
}

/**
 * The public dictionaries (types, statuses, places, the attribute catalogue) and the places
 * operators add. The only writer of the reference tables. `names` is the process's one
 * in-memory cache of their names, which other modules use to name what they show.
 */
export class ReferenceService {
  constructor(
    private readonly db: Database,
    readonly names: ReferenceNames,
  ) {}

  propertyTypes() {
    return repository.listPropertyTypes(this.db)
  }

  dealTypes() {
    return repository.listDealTypes(this.db)
  }

  propertyStatuses() {
    return repository.listPropertyStatuses(this.db)
  }

  attributes() {
    return attributes
  }

  cities(country?: string) {
    return repository.listCities(this.db, country)
  }

  async city(id: number) {
    return found(await repository.findCity(this.db, id), CITY_NOT_FOUND)
  }

  districts(cityId?: number) {
    return repository.listDistricts(this.db, cityId)
  }

  async district(id: number) {
    return found(await repository.findDistrict(this.db, id), DISTRICT_NOT_FOUND)
  }

  residentialComplexes(cityId?: number) {
    return repository.listResidentialComplexes(this.db, cityId)
  }

  async residentialComplex(id: number) {
    return found(await repository.findResidentialComplex(this.db, id), RESIDENTIAL_COMPLEX_NOT_FOUND)
  }

  async addCity(input: Static<typeof CityCreateBody>) {
    const { country, latitude = null, longitude = null } = input
    if (!isSupportedCountry(country)) {
      throw ApiError.validation([{ loc: ['body', 'country'], msg: `"${country}" is not an ISO 3166-1 alpha-2 country code we know` }])
    }
    const unpaired = unpairedCoordinate(latitude, longitude, 'a city')
    if (unpaired) throw ApiError.validation([{ loc: ['body', unpaired.field], msg: unpaired.msg }])
    const name = placeName(input.name)
    const region = input.region == null ? null : placeName(input.region, 'region')
    const city = await repository.insertCity(this.db, { name, country, region, latitude, longitude })
    if (!city) throw ApiError.conflict('A city with this name already exists in this country and region.')
    return city
  }

  async addDistrict(input: Static<typeof DistrictCreateBody>) {
    const { city_id: cityId } = input
    const name = placeName(input.name)
    await this.cityMustExist(cityId)
    const district = await repository.insertDistrict(this.db, { cityId, name })
    if (!district) throw ApiError.conflict('This city already has a district with this name.')
    return district
  }

  async addResidentialComplex(input: Static<typeof ResidentialComplexCreateBody>) {
    const { city_id: cityId, district_id: districtId } = input
    const name = placeName(input.name)
    await this.cityMustExist(cityId)
    if (districtId != null && !(await repository.findDistrictInCity(this.db, districtId, cityId))) {
      throw ApiError.validation([{ loc: ['body', 'district_id'], msg: `there is no district with id ${districtId} in city ${cityId}` }])
    }
    const complex = await repository.insertResidentialComplex(this.db, { cityId, districtId: districtId ?? null, name })
    if (!complex) throw ApiError.conflict('This city already has a residential complex with this name.')
    return complex
  }

  private async cityMustExist(cityId: number): Promise<void> {
    if (!(await repository.findCity(this.db, cityId))) {
      throw ApiError.validation([{ loc: ['body', 'city_id'], msg: `there is no city with id ${cityId}` }])
    }
  }
}

/**
 * A place's name as stored: without blanks or invisible characters at either end, so that
 * ` Москва ` is the Москва already there (a 409), not another; all of them is blank (a 422).
 */
function placeName(text: string, field = 'name'): string {
  const name = trimmedText(text)
  if (name === '') throw ApiError.validation([{ loc: ['body', field], msg: 'must not be blank' }])
  return name
}
