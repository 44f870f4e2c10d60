/**
 * What a filter of the catalogue can ask of a listing, as it was at one moment: the values
 * `GET /mls/properties` filters on. An `mls.*` event keeps the facts of its listing before and
 * after the change (events.subject), so that fan-out can tell, in memory, which filtered
 * subscriptions it concerns, and which of them the listing has just stopped matching.
 */
export interface ListingFacts {
  id: number
  tenant_id: number
  property_type_id: number
  deal_type_id: number
  city_id: number | null
  district_id: number | null
  residential_complex_id: number | null
  price: number | null
  area: number | null
  rooms: number | null
  latitude: number | null
  longitude: number | null
}

/** The listing before and after the change an event announces; null where it was or is not in the catalogue. */
export interface EventSubject {
  before: ListingFacts | null
  after: ListingFacts | null
}

/** The columns of a listing's row the facts come from (db/schema.ts's PropertyRow has them). */
interface FactColumns {
  id: number
  tenantId: number
  propertyTypeId: number
  dealTypeId: number
  cityId: number | null
  districtId: number | null
  residentialComplexId: number | null
  price: number | null
  area: number | null
  rooms: number | null
  latitude: number | null
  longitude: number | null
}

export function listingFactsOf(row: FactColumns): ListingFacts {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    property_type_id: row.propertyTypeId,
    deal_type_id: row.dealTypeId,
    city_id: row.cityId,
    district_id: row.districtId,
    residential_complex_id: row.residentialComplexId,
    price: row.price,
    area: row.area,
    rooms: row.rooms,
    latitude: row.latitude,
    longitude: row.longitude,
  }
}
