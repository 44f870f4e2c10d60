import { Type, type Static } from 'typebox'
import { CELLS_PER_TILE, MAX_CELLS_PER_SIDE, MAX_RADIUS_M } from './geo.js'
import { CursorPage, CursorPageQuery, Id, Int32, Int64, Named, Nullable, Timestamp, Url, PathId } from '../../lib/schemas.js'
import { PROPERTY_NOT_FOUND } from '../../lib/errors.js'
import { DEFAULT_ATTRIBUTE_MAX } from '../reference/attribute-catalogue.js'

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
    latitude: Nullable(Type.Number({ minimum: -90, maximum: 90, description: 'Latitude of the listing, degrees; null when its agency gave none.' })),
    longitude: Nullable(Type.Number({ minimum: -180, maximum: 180, description: 'Longitude of the listing, degrees; null when its agency gave none.' })),
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

export const catalogueSorts = ['created_desc', 'price_asc', 'price_desc', 'distance'] as const

/** The map filters, checked beyond their types in geo.ts (422 naming the parameter). */
const MapFilters = {
  bbox: Type.Optional(
    Type.String({
      maxLength: 200,
      description:
        'An area on the map, `minLon,minLat,maxLon,maxLat` in degrees (WGS 84), edges included; min below max (an area across the antimeridian is two searches). Listings without coordinates never match.',
      examples: ['37.55,55.73,37.68,55.78'],
    }),
  ),
  near: Type.Optional(
    Type.String({
      maxLength: 100,
      description: 'A point, `lat,lon` in degrees: listings within `radius_m` of it (great-circle distance). Needs `radius_m`.',
      examples: ['55.7558,37.6176'],
    }),
  ),
  radius_m: Type.Optional(
    Type.Number({ exclusiveMinimum: 0, maximum: MAX_RADIUS_M, description: `Metres from \`near\`, up to ${MAX_RADIUS_M}; only with \`near\`.` }),
  ),
}

/** The filters a search and its clusters share. */
const CatalogueFilters = {
  city_id: Type.Optional(Id),
  property_type_id: Type.Optional(Int32({ minimum: 1, maximum: 32767 })),
  deal_type_id: Type.Optional(Int32({ minimum: 1, maximum: 32767 })),
  tenant_id: Type.Optional(Id),
  min_price: AmountFilter('Minimum price, inclusive.'),
  max_price: AmountFilter('Maximum price, inclusive.'),
  district_id: Type.Optional(Id),
  residential_complex_id: Type.Optional(Id),
  // Any number of rooms a listing can have (a hotel's, an office block's): one it shows, one it is found by.
  rooms: Type.Optional(Int32({ minimum: 0, maximum: DEFAULT_ATTRIBUTE_MAX.integer, description: 'Exact number of rooms.' })),
  min_area: AmountFilter('Minimum total area, m², inclusive.'),
  max_area: AmountFilter('Maximum total area, m², inclusive.'),
}

export const CatalogueQuery = Type.Object({
  ...CatalogueFilters,
  ...MapFilters,
  sort: Type.Optional(
    Type.Enum([...catalogueSorts], {
      type: 'string',
      default: 'created_desc',
      description:
        'Newest first by default. Listings without a price come last with `price_asc` and first with `price_desc`. `distance`, nearest first, only with `near`.',
    }),
  ),
  ...CursorPageQuery,
})
export type CatalogueQuery = Static<typeof CatalogueQuery>

export const ClustersQuery = Type.Object({
  ...CatalogueFilters,
  ...MapFilters,
  bbox: Type.String({ ...MapFilters.bbox, description: 'The map’s visible area, `minLon,minLat,maxLon,maxLat` in degrees (WGS 84), edges included.' }),
  zoom: Int32({
    minimum: 0,
    maximum: 20,
    description: `The map’s zoom (web-mercator tiles): each tile of 360/2^zoom degrees is split in ${CELLS_PER_TILE} × ${CELLS_PER_TILE} cells, one cluster per cell with listings. The bbox may span at most ${MAX_CELLS_PER_SIDE / CELLS_PER_TILE} tiles on a side.`,
  }),
})
export type ClustersQuery = Static<typeof ClustersQuery>

const Latitude = Type.Number({ minimum: -90, maximum: 90 })
const Longitude = Type.Number({ minimum: -180, maximum: 180 })

export const MapCluster = Type.Object(
  {
    lat: { ...Latitude, description: 'The mean latitude of the cluster’s listings.' },
    lon: { ...Longitude, description: 'The mean longitude of the cluster’s listings.' },
    count: Int32({ minimum: 1, description: 'Exact number of matching listings in the cluster.' }),
    bbox: Type.Array(Type.Number({ minimum: -180, maximum: 180 }), {
      minItems: 4,
      maxItems: 4,
      description: 'The smallest box holding the cluster’s listings, `[minLon, minLat, maxLon, maxLat]`: zoom the map to it.',
    }),
  },
  { title: 'MapCluster' },
)
export type MapCluster = Static<typeof MapCluster>

export const MapClusters = Type.Object(
  {
    clusters: Type.Array(MapCluster, { maxItems: MAX_CELLS_PER_SIDE * MAX_CELLS_PER_SIDE + 2 * MAX_CELLS_PER_SIDE + 1 }),
    total: Int64({ description: 'Number of listings matching the filters in the bbox: the sum of the counts.' }),
  },
  { title: 'MapClusters' },
)
export type MapClusters = Static<typeof MapClusters>

export const CatalogueIdParams = Type.Object({ id: PathId(PROPERTY_NOT_FOUND) })
