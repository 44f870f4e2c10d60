import { toOffsetTimestamp } from '../../lib/time.js'
import type { FullPropertyRow } from './properties.repository.js'
import type { Property } from './properties.schemas.js'

/** The full property of D5 from its joined row. */
export function toProperty(row: FullPropertyRow, images: Property['images'] = []): Property {
  const p = row.property
  return {
    id: p.id,
    status_id: p.statusId,
    status_name: row.statusName,
    property_type: row.propertyType,
    deal_type: row.dealType,
    price: p.price,
    description: p.description,
    owner: row.owner,
    location:
      p.cityId === null
        ? null
        : {
            city_id: p.cityId,
            district_id: p.districtId,
            residential_complex_id: p.residentialComplexId,
            address: p.address,
            street: p.street,
            house_number: p.houseNumber,
            apartment_number: p.apartmentNumber,
            latitude: p.latitude,
            longitude: p.longitude,
            city: { id: p.cityId, name: row.cityName! },
            district: p.districtId === null ? null : { id: p.districtId, name: row.districtName! },
            residential_complex: p.residentialComplexId === null ? null : { id: p.residentialComplexId, name: row.complexName! },
          },
    attributes: p.attributes,
    moderation: p.moderation,
    images,
    created_at: toOffsetTimestamp(p.createdAt),
    updated_at: toOffsetTimestamp(p.updatedAt),
    published_at: p.publishedAt && toOffsetTimestamp(p.publishedAt),
  }
}
