import { Type, type Static } from 'typebox'
import { CursorPage, CursorPageQuery, Id, Int32, Named, Nullable, Timestamp, Url } from '../../lib/schemas.js'

const Amount = (description: string) => Type.Number({ minimum: 0, description })

/** A catalogue item, exactly as the interface gives it: never an owner, a phone, an e-mail or an agency's contact. */
export const CatalogueItem = Type.Object(
  {
    id: Id,
    property_type: Named,
    deal_type: Named,
    city: Named,
    district: Nullable(Named),
    residential_complex: Nullable(Named),
    price: Nullable(Amount('Price.')),
    area: Nullable(Amount('Total area, m².')),
    rooms: Nullable(Int32({ minimum: 0 })),
    floor: Nullable(Int32()),
    total_floors: Nullable(Int32()),
    thumbnail_url: Nullable(Url('Small rendition of the first photo, or null.')),
    created_at: Timestamp,
  },
  { title: 'CatalogueItem' },
)
export type CatalogueItem = Static<typeof CatalogueItem>

/** A published listing: the catalogue item plus its description, attributes, photo URLs and publication time. */
export const CatalogueDetail = Type.Object(
  {
    ...CatalogueItem.properties,
    description: Nullable(Type.String({ maxLength: 10_000 })),
    attributes: Type.Record(Type.String(), Type.Union([Type.String({ maxLength: 1000 }), Type.Number(), Type.Boolean()]), {
      maxProperties: 100,
      description: 'Attribute name → typed value, by the catalogue of `GET /attributes`.',
    }),
    images: Type.Array(Url('Photo URL, in display order.'), { maxItems: 10_000 }),
    published_at: Timestamp,
  },
  { title: 'CatalogueProperty' },
)
export type CatalogueDetail = Static<typeof CatalogueDetail>

export const CataloguePage = CursorPage(CatalogueItem, 'CataloguePage')

const AmountFilter = (description: string) => Type.Optional(Type.Number({ minimum: 0, description }))

export const catalogueSorts = ['created_desc', 'price_asc', 'price_desc'] as const

export const CatalogueQuery = Type.Object({
  city_id: Type.Optional(Id),
  property_type_id: Type.Optional(Int32({ minimum: 1, maximum: 32767 })),
  deal_type_id: Type.Optional(Int32({ minimum: 1, maximum: 32767 })),
  tenant_id: Type.Optional(Id),
  min_price: AmountFilter('Minimum price, inclusive.'),
  max_price: AmountFilter('Maximum price, inclusive.'),
  district_id: Type.Optional(Id),
  residential_complex_id: Type.Optional(Id),
  rooms: Type.Optional(Int32({ minimum: 0, maximum: 1000, description: 'Exact number of rooms.' })),
  min_area: AmountFilter('Minimum total area, m², inclusive.'),
  max_area: AmountFilter('Maximum total area, m², inclusive.'),
  sort: Type.Optional(
    Type.Enum([...catalogueSorts], {
      type: 'string',
      default: 'created_desc',
      description: 'Newest first by default. Listings without a price come last with `price_asc` and first with `price_desc`.',
    }),
  ),
  ...CursorPageQuery,
})
export type CatalogueQuery = Static<typeof CatalogueQuery>

export const CatalogueIdParams = Type.Object({ id: Id })
