import { Type } from 'typebox'
import { Id } from '../../lib/schemas.js'

export const NamedItem = Type.Object({ id: Type.Integer(), name: Type.String() })

export const PropertyStatus = Type.Object({ id: Type.Integer(), code: Type.String(), name: Type.String() })

export const City = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  country: Type.String({ description: 'ISO 3166-1 alpha-2.' }),
  region: Type.Union([Type.String(), Type.Null()]),
  latitude: Type.Union([Type.Number(), Type.Null()]),
  longitude: Type.Union([Type.Number(), Type.Null()]),
})

export const District = Type.Object({ id: Type.Integer(), city_id: Type.Integer(), name: Type.String() })

export const ResidentialComplex = Type.Object({
  id: Type.Integer(),
  city_id: Type.Integer(),
  district_id: Type.Union([Type.Integer(), Type.Null()]),
  name: Type.String(),
})

export const Attribute = Type.Object({
  name: Type.String(),
  type: Type.Enum(['number', 'integer', 'bool', 'enum']),
  allowed_values: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'For `enum`: the exact allowed strings.' }),
  meaning: Type.String(),
  property_types: Type.Array(Type.String(), {
    description: 'The property types the attribute applies to; on others the internal check rejects it.',
  }),
})

export const CitiesQuery = Type.Object({
  country: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2.' })),
})

export const ByCityQuery = Type.Object({ city_id: Type.Optional(Id) })

const Name = Type.String({ minLength: 1, maxLength: 200 })
const Coordinate = (min: number, max: number) => Type.Optional(Type.Union([Type.Number({ minimum: min, maximum: max }), Type.Null()]))

export const CityCreateBody = Type.Object(
  {
    name: Name,
    country: Type.String({ pattern: '^[A-Z]{2}$' }),
    region: Type.Optional(Type.Union([Name, Type.Null()])),
    latitude: Coordinate(-90, 90),
    longitude: Coordinate(-180, 180),
  },
  { additionalProperties: false, examples: [{ name: 'Тюмень', country: 'RU', region: 'Тюменская область', latitude: 57.153, longitude: 65.5343 }] },
)

export const DistrictCreateBody = Type.Object(
  { city_id: Id, name: Name },
  { additionalProperties: false, examples: [{ city_id: 1, name: 'Троицкий административный округ' }] },
)

export const ResidentialComplexCreateBody = Type.Object(
  { city_id: Id, district_id: Type.Optional(Type.Union([Id, Type.Null()])), name: Name },
  { additionalProperties: false, examples: [{ city_id: 1, district_id: 6, name: 'Символ' }] },
)
