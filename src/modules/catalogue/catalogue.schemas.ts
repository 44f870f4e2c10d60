import { Type, type Static } from 'typebox'
import { Id, Named, Nullable, Page, PageQuery, Timestamp } from '../../lib/schemas.js'

/** §2.4 to the letter: never an owner, a phone, an e-mail or a tenant's contact. */
export const CatalogueItem = Type.Object({
  id: Type.Integer(),
  property_type: Named,
  deal_type: Named,
  city: Named,
  district: Nullable(Named),
  residential_complex: Nullable(Named),
  price: Nullable(Type.Number()),
  area: Nullable(Type.Number()),
  rooms: Nullable(Type.Integer()),
  floor: Nullable(Type.Integer()),
  total_floors: Nullable(Type.Integer()),
  thumbnail_url: Nullable(Type.String({ description: 'Small rendition of the first photo, or null.' })),
  created_at: Timestamp,
})
export type CatalogueItem = Static<typeof CatalogueItem>

/** D6: §2.4 plus the listing's description, attributes, photo URLs and publication time. */
export const CatalogueDetail = Type.Object({
  ...CatalogueItem.properties,
  description: Nullable(Type.String()),
  attributes: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
  images: Type.Array(Type.String({ description: 'Photo URL, in display order.' })),
  published_at: Timestamp,
})
export type CatalogueDetail = Static<typeof CatalogueDetail>

export const CataloguePage = Page(CatalogueItem)

const Amount = (description: string) => Type.Optional(Type.Number({ minimum: 0, description }))

export const catalogueSorts = ['created_desc', 'price_asc', 'price_desc'] as const

export const CatalogueQuery = Type.Object({
  city_id: Type.Optional(Id),
  property_type_id: Type.Optional(Type.Integer({ minimum: 1, maximum: 32767 })),
  deal_type_id: Type.Optional(Type.Integer({ minimum: 1, maximum: 32767 })),
  tenant_id: Type.Optional(Id),
  min_price: Amount('Minimum price, inclusive.'),
  max_price: Amount('Maximum price, inclusive.'),
  district_id: Type.Optional(Id),
  residential_complex_id: Type.Optional(Id),
  rooms: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000, description: 'Exact number of rooms.' })),
  min_area: Amount('Minimum total area, m², inclusive.'),
  max_area: Amount('Maximum total area, m², inclusive.'),
  sort: Type.Optional(Type.Enum([...catalogueSorts], { default: 'created_desc', description: 'Newest first by default.' })),
  ...PageQuery,
})
export type CatalogueQuery = Static<typeof CatalogueQuery>

export const CatalogueIdParams = Type.Object({ id: Id })
