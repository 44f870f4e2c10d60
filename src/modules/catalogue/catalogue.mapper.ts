import type { ReferenceNames } from '../reference/reference-names.js'
import type { DetailRow, ItemRow } from './catalogue.repository.js'
import type { CatalogueDetail, CatalogueItem } from './catalogue.schemas.js'

/** The places rows name, for ReferenceNames.ensure before they are mapped. */
export function placesOf(rows: readonly ItemRow[]) {
  return {
    cityIds: rows.map((row) => row.cityId),
    districtIds: rows.map((row) => row.districtId),
    complexIds: rows.map((row) => row.complexId),
  }
}

/** A catalogue list item (never an owner, a phone, an e-mail or an agency's contact). */
export function toCatalogueItem(row: ItemRow, names: ReferenceNames, mediaBase: string): CatalogueItem {
  return {
    id: row.id,
    property_type: { id: row.propertyTypeId, name: names.propertyTypes.get(row.propertyTypeId)! },
    deal_type: { id: row.dealTypeId, name: names.dealTypes.get(row.dealTypeId)! },
    city: names.ref('city', row.cityId)!,
    district: names.ref('district', row.districtId),
    residential_complex: names.ref('complex', row.complexId),
    latitude: row.latitude,
    longitude: row.longitude,
    price: row.price,
    area: row.area,
    rooms: row.rooms,
    floor: row.floor,
    total_floors: row.totalFloors,
    thumbnail_url: row.thumbnailKey === null ? null : `${mediaBase}/${row.thumbnailKey}`,
    created_at: row.createdAt,
  }
}

/** A published listing: the list item plus its description, attributes, photo URLs and publication time. */
export function toCatalogueDetail(row: DetailRow, names: ReferenceNames, mediaBase: string): CatalogueDetail {
  return {
    ...toCatalogueItem(row, names, mediaBase),
    description: row.description,
    attributes: row.attributes,
    images: row.imageKeys.map((key) => `${mediaBase}/${key}`),
    published_at: row.publishedAt,
  }
}
