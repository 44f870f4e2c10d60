import { and, asc, desc, eq, gte, inArray, lte, sql, type SQL } from 'drizzle-orm'
import { alias, type SelectedFields } from 'drizzle-orm/pg-core'
import type { Database } from '../../db/client.js'
import {
  catalogueCounts,
  cities,
  dealTypes,
  districts,
  properties,
  propertyTypes,
  PUBLISHED,
  residentialComplexes,
} from '../../db/schema.js'
import { toOffsetTimestamp } from '../../lib/time.js'
import type { CatalogueDetail, CatalogueItem, CatalogueQuery } from './catalogue.schemas.js'

export interface CatalogueFilter {
  cityId?: number | undefined
  propertyTypeId?: number | undefined
  dealTypeId?: number | undefined
  tenantId?: number | undefined
  minPrice?: number | undefined
  maxPrice?: number | undefined
  districtId?: number | undefined
  residentialComplexId?: number | undefined
  rooms?: number | undefined
  minArea?: number | undefined
  maxArea?: number | undefined
}

export function filterFromQuery(query: CatalogueQuery): CatalogueFilter {
  return {
    cityId: query.city_id,
    propertyTypeId: query.property_type_id,
    dealTypeId: query.deal_type_id,
    tenantId: query.tenant_id,
    minPrice: query.min_price,
    maxPrice: query.max_price,
    districtId: query.district_id,
    residentialComplexId: query.residential_complex_id,
    rooms: query.rooms,
    minArea: query.min_area,
    maxArea: query.max_area,
  }
}

function conditions(filter: CatalogueFilter): SQL {
  const optional = <T>(value: T | undefined, condition: (value: T) => SQL) => (value === undefined ? undefined : condition(value))
  return and(
    eq(properties.statusId, PUBLISHED),
    optional(filter.cityId, (v) => eq(properties.cityId, v)),
    optional(filter.propertyTypeId, (v) => eq(properties.propertyTypeId, v)),
    optional(filter.dealTypeId, (v) => eq(properties.dealTypeId, v)),
    optional(filter.tenantId, (v) => eq(properties.tenantId, v)),
    optional(filter.minPrice, (v) => gte(properties.price, v)),
    optional(filter.maxPrice, (v) => lte(properties.price, v)),
    optional(filter.districtId, (v) => eq(properties.districtId, v)),
    optional(filter.residentialComplexId, (v) => eq(properties.residentialComplexId, v)),
    optional(filter.rooms, (v) => eq(properties.rooms, v)),
    optional(filter.minArea, (v) => gte(properties.area, v)),
    optional(filter.maxArea, (v) => lte(properties.area, v)),
  )!
}

const orderings = {
  created_desc: [desc(properties.createdAt), desc(properties.id)],
  price_asc: [asc(properties.price), asc(properties.id)],
  price_desc: [desc(properties.price), desc(properties.id)],
} as const

export type CatalogueSort = keyof typeof orderings

const district = alias(districts, 'district')
const complex = alias(residentialComplexes, 'complex')

/** The §2.4 columns with every name joined in, so a page costs one query, not one per row. */
const itemColumns = {
  id: properties.id,
  propertyTypeId: properties.propertyTypeId,
  propertyTypeName: propertyTypes.name,
  dealTypeId: properties.dealTypeId,
  dealTypeName: dealTypes.name,
  cityId: properties.cityId,
  cityName: cities.name,
  districtId: properties.districtId,
  districtName: district.name,
  complexId: properties.residentialComplexId,
  complexName: complex.name,
  price: properties.price,
  area: properties.area,
  rooms: properties.rooms,
  floor: properties.floor,
  totalFloors: properties.totalFloors,
  createdAt: properties.createdAt,
}

function selectItems<T extends SelectedFields>(db: Database, extra: T) {
  return db
    .select({ ...itemColumns, ...extra })
    .from(properties)
    .innerJoin(propertyTypes, eq(propertyTypes.id, properties.propertyTypeId))
    .innerJoin(dealTypes, eq(dealTypes.id, properties.dealTypeId))
    .innerJoin(cities, eq(cities.id, properties.cityId))
    .leftJoin(district, eq(district.id, properties.districtId))
    .leftJoin(complex, eq(complex.id, properties.residentialComplexId))
}

type ItemRow = {
  id: number
  propertyTypeId: number
  propertyTypeName: string
  dealTypeId: number
  dealTypeName: string
  cityId: number | null
  cityName: string
  districtId: number | null
  districtName: string | null
  complexId: number | null
  complexName: string | null
  price: number | null
  area: number | null
  rooms: number | null
  floor: number | null
  totalFloors: number | null
  createdAt: Date
}

function toItem(row: ItemRow): CatalogueItem {
  return {
    id: row.id,
    property_type: { id: row.propertyTypeId, name: row.propertyTypeName },
    deal_type: { id: row.dealTypeId, name: row.dealTypeName },
    city: { id: row.cityId!, name: row.cityName },
    district: row.districtId === null ? null : { id: row.districtId, name: row.districtName! },
    residential_complex: row.complexId === null ? null : { id: row.complexId, name: row.complexName! },
    price: row.price,
    area: row.area,
    rooms: row.rooms,
    floor: row.floor,
    total_floors: row.totalFloors,
    thumbnail_url: null,
    created_at: toOffsetTimestamp(row.createdAt),
  }
}

/**
 * One page of the catalogue. The ids of the page are found first on the partial indexes of
 * schema.ts (an index scan that reads no other column), then only those rows are read and
 * named, so a deep offset skips index entries, not joined rows.
 */
export async function findCataloguePage(
  db: Database,
  filter: CatalogueFilter,
  sort: CatalogueSort,
  limit: number,
  offset: number,
): Promise<CatalogueItem[]> {
  const ids = db
    .select({ id: properties.id })
    .from(properties)
    .where(conditions(filter))
    .orderBy(...orderings[sort])
    .limit(limit)
    .offset(offset)
  const rows = await selectItems(db, {})
    .where(inArray(properties.id, ids))
    .orderBy(...orderings[sort])
  return rows.map(toItem)
}

const countableByFacets = new Set<keyof CatalogueFilter>(['cityId', 'propertyTypeId', 'dealTypeId'])

/**
 * The exact number of published listings matching the filter. Filters on city, type and deal
 * alone (the landing page and the most common searches) are summed from catalogue_counts,
 * which a trigger keeps exact; narrower filters are counted on the same indexes as the page.
 */
export async function countCatalogue(db: Database, filter: CatalogueFilter): Promise<number> {
  const used = (Object.keys(filter) as (keyof CatalogueFilter)[]).filter((key) => filter[key] !== undefined)
  if (used.every((key) => countableByFacets.has(key))) {
    const [row] = await db
      .select({ total: sql<number>`coalesce(sum(${catalogueCounts.listings}), 0)::int` })
      .from(catalogueCounts)
      .where(
        and(
          filter.cityId === undefined ? undefined : eq(catalogueCounts.cityId, filter.cityId),
          filter.propertyTypeId === undefined ? undefined : eq(catalogueCounts.propertyTypeId, filter.propertyTypeId),
          filter.dealTypeId === undefined ? undefined : eq(catalogueCounts.dealTypeId, filter.dealTypeId),
        ),
      )
    return row?.total ?? 0
  }
  const [row] = await db.select({ total: sql<number>`count(*)::int` }).from(properties).where(conditions(filter))
  return row?.total ?? 0
}

/** One published listing as the catalogue shows it (D6), or undefined. */
export async function findCatalogueDetail(db: Database, id: number): Promise<CatalogueDetail | undefined> {
  const [row] = await selectItems(db, {
    description: properties.description,
    attributes: properties.attributes,
    publishedAt: properties.publishedAt,
  }).where(and(eq(properties.id, id), eq(properties.statusId, PUBLISHED)))
  if (!row) return undefined
  return {
    ...toItem(row),
    description: row.description,
    attributes: row.attributes,
    images: [],
    published_at: toOffsetTimestamp(row.publishedAt!),
  }
}

/** The §2.4 object of one listing whatever its status (the payload of `mls.new_listing`). */
export async function findCatalogueItem(db: Database, id: number): Promise<CatalogueItem | undefined> {
  const [row] = await selectItems(db, {}).where(eq(properties.id, id))
  return row && toItem(row)
}
