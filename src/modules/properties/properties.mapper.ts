import type { PropertyRow, RevisionRow } from '../../db/schema.js'
import { toOffsetTimestamp } from '../../lib/time.js'
import type { ReferenceNames } from '../reference/reference-names.js'
import type { Property } from './properties.schemas.js'

export interface OwnerView {
  id: number
  name: string
  phone: string
  notes: string | null
}

/**
 * The full property, as its agency sees it (with a revision, `p` is the listing as the revision makes it), from its row and owner, named from the reference names (the caller
 * has ensured the row's places are loaded).
 */
export function toProperty(p: PropertyRow, owner: OwnerView | null, names: ReferenceNames, images: Property['images'], revision: RevisionRow | null): Property {
  return {
    id: p.id,
    external_id: p.externalId,
    status_id: p.statusId,
    status_name: names.statuses.get(p.statusId)!,
    property_type: names.propertyTypes.get(p.propertyTypeId)!,
    deal_type: names.dealTypes.get(p.dealTypeId)!,
    price: p.price,
    description: p.description,
    owner,
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
            city: names.ref('city', p.cityId)!,
            district: names.ref('district', p.districtId),
            residential_complex: names.ref('complex', p.residentialComplexId),
          },
    attributes: p.attributes,
    moderation: p.moderation,
    revision: revision && { status: revision.status, submitted_at: toOffsetTimestamp(revision.submittedAt), moderation: revision.moderation },
    images,
    created_at: toOffsetTimestamp(p.createdAt),
    updated_at: toOffsetTimestamp(p.updatedAt),
    published_at: p.publishedAt && toOffsetTimestamp(p.publishedAt),
  }
}
