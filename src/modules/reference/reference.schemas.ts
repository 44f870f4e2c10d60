import { Type } from 'typebox'
import { seedPropertyStatuses } from '../../db/seed/dictionaries.js'
import { asStoredText, Id, Named, Nullable, OneLineName, StringEnum } from '../../lib/schemas.js'
import { PropertyTypeName, propertyTypeNames, StatusId } from '../properties/properties.schemas.js'
import { attributeCatalogue } from './attribute-catalogue.js'

const PlaceName = Type.String({ maxLength: 200 })

/** Property types and deal types: `{id, name}`, the same reference item the listings show. */
export const NamedItem = Named

export const PropertyStatus = Type.Object(
  {
    id: StatusId,
    code: asStoredText(
      StringEnum(
        'PropertyStatusCode',
        seedPropertyStatuses.map((status) => status.code),
      ),
    ),
    name: Type.String({ maxLength: 100 }),
  },
  { title: 'PropertyStatus' },
)

const Coordinate = (min: number, max: number) => Nullable(Type.Number({ minimum: min, maximum: max }))
const Country = Type.String({ pattern: '^[A-Z]{2}$', maxLength: 2, description: 'ISO 3166-1 alpha-2.' })

export const City = Type.Object(
  {
    id: Id,
    name: PlaceName,
    country: Country,
    region: Nullable(PlaceName),
    latitude: Coordinate(-90, 90),
    longitude: Coordinate(-180, 180),
  },
  { title: 'City' },
)

export const District = Type.Object({ id: Id, city_id: Id, name: PlaceName }, { title: 'District' })

export const ResidentialComplex = Type.Object(
  {
    id: Id,
    city_id: Id,
    district_id: Nullable(Id),
    name: PlaceName,
  },
  { title: 'ResidentialComplex' },
)

const mostAllowedValues = Math.max(...attributeCatalogue.map((attribute) => attribute.allowedValues?.length ?? 0))

export const Attribute = Type.Object(
  {
    name: Type.String({ maxLength: 50, pattern: '^[a-z_]+$' }),
    type: Type.Enum(['number', 'integer', 'bool', 'enum'], { type: 'string' }),
    allowed_values: Nullable(
      Type.Array(Type.String({ maxLength: 100 }), { maxItems: mostAllowedValues, description: 'For `enum`: the exact allowed strings.' }),
    ),
    meaning: Type.String({ maxLength: 200 }),
    min: Nullable(Type.Number({ description: 'For `number` and `integer`: the least value accepted.' })),
    max: Nullable(Type.Number({ description: 'For `number` and `integer`: the greatest value accepted.' })),
    decimals: Nullable(
      Type.Integer({
        minimum: 0,
        maximum: 15,
        description: 'For a `number` that has one: the most digits after the point (areas). `null` for other numbers: any, within 15 significant digits.',
      }),
    ),
    property_types: Type.Array(PropertyTypeName, {
      maxItems: propertyTypeNames.length,
      description: 'The property types the attribute applies to; on others the internal check rejects it.',
    }),
  },
  { title: 'Attribute' },
)

export const CitiesQuery = Type.Object({
  country: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2.' })),
})

export const ByCityQuery = Type.Object({ city_id: Type.Optional(Id) })

const Name = OneLineName()
const CoordinateInput = (min: number, max: number) => Type.Optional(Nullable(Type.Number({ minimum: min, maximum: max })))

export const CityCreateBody = Type.Object(
  {
    name: Name,
    country: Type.String({ pattern: '^[A-Z]{2}$' }),
    region: Type.Optional(Nullable(Name)),
    latitude: CoordinateInput(-90, 90),
    longitude: CoordinateInput(-180, 180),
  },
  {
    title: 'CityCreate',
    additionalProperties: false,
    examples: [{ name: 'Тюмень', country: 'RU', region: 'Тюменская область', latitude: 57.153, longitude: 65.5343 }],
  },
)

export const DistrictCreateBody = Type.Object(
  { city_id: Id, name: Name },
  { title: 'DistrictCreate', additionalProperties: false, examples: [{ city_id: 18, name: 'Сарайшык' }] },
)

export const ResidentialComplexCreateBody = Type.Object(
  { city_id: Id, district_id: Type.Optional(Nullable(Id)), name: Name },
  { title: 'ResidentialComplexCreate', additionalProperties: false, examples: [{ city_id: 1, district_id: 8, name: 'Мосфильмовский' }] },
)
