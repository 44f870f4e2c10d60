import { PropertyImage } from '../images/images.schemas.js'
import { Type, type Static } from 'typebox'
import { seedDealTypes, seedPropertyStatuses, seedPropertyTypes } from '../../db/seed/dictionaries.js'
import { Id, Named, Nullable, Page, PageQuery, Timestamp } from '../../lib/schemas.js'

export const propertyTypeNames = seedPropertyTypes.map((type) => type.name)
export const dealTypeNames = seedDealTypes.map((type) => type.name)

/**
 * A decimal as a JSON number or a numeric string (D2), within bounds; with `decimals`, no more
 * digits after the point than its column keeps (a price of 0.001 is refused, not stored as 0).
 */
const Decimal = (options: { minimum: number; maximum: number; example: string; decimals?: number }) =>
  Type.Union(
    [
      Type.Number({ minimum: options.minimum, maximum: options.maximum, ...(options.decimals === undefined ? {} : { 'x-max-decimals': options.decimals }) }),
      Type.String({ pattern: `^${options.minimum < 0 ? '-?' : ''}\\d{1,13}(\\.\\d${options.decimals === undefined ? '+' : `{1,${options.decimals}}`})?$` }),
    ],
    {
      'x-message': `must be a number from ${options.minimum} to ${options.maximum}${options.decimals === undefined ? '' : ` with at most ${options.decimals} decimal places`}, as a JSON number or a string like "${options.example}"`,
    },
  )

const Text = (maxLength: number, description?: string) => Type.String({ maxLength, ...(description ? { description } : {}) })

export const OwnerInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'Full name of the owner.' }),
    phone: Type.String({
      minLength: 1,
      maxLength: 40,
      description: 'Any usual format; normalised for the agency’s country (`8 (912) 345-67-89` → `+7 912 345-67-89`). Identifies the owner within the agency.',
    }),
    notes: Type.Optional(Nullable(Text(5000))),
  },
  { additionalProperties: false },
)

export const LocationInput = Type.Object(
  {
    city_id: Id,
    district_id: Type.Optional(Nullable(Id)),
    residential_complex_id: Type.Optional(Nullable(Id)),
    address: Type.Optional(Nullable(Text(500))),
    street: Type.Optional(Nullable(Text(200))),
    house_number: Type.Optional(Nullable(Text(50))),
    apartment_number: Type.Optional(Nullable(Text(50))),
    latitude: Type.Optional(Nullable(Decimal({ minimum: -90, maximum: 90, example: '55.7558' }))),
    longitude: Type.Optional(Nullable(Decimal({ minimum: -180, maximum: 180, example: '37.6176' }))),
  },
  { additionalProperties: false },
)

const attributeValue = Type.Union([Type.String(), Type.Number(), Type.Boolean()])
const attributesDescription =
  'Attribute name → value, by the catalogue of `GET /attributes`. Values are strings as §2.2 says (`"54.5"`, `"3"`, `"true"`, `"Кирпичный"`); JSON numbers and booleans are accepted too.'

const submissionFields = {
  property_type: Type.Enum(propertyTypeNames, { description: 'Exact, case-sensitive.' }),
  deal_type: Type.Enum(dealTypeNames, { description: 'Exact, case-sensitive.' }),
  price: Type.Optional(Nullable(Decimal({ minimum: 0, maximum: 9_999_999_999_999.99, example: '8500000.00', decimals: 2 }))),
  description: Type.Optional(Nullable(Text(10_000, 'Shown in the public catalogue: no phone numbers, e-mail addresses or messenger contacts.'))),
  owner: Type.Optional(Nullable(OwnerInput)),
  location: Type.Optional(Nullable(LocationInput)),
  attributes: Type.Optional(Type.Record(Type.String(), attributeValue, { maxProperties: 100, description: attributesDescription })),
}

const submissionExample = {
  property_type: 'Квартира',
  deal_type: 'Продажа',
  price: 8500000,
  description: 'Светлая двухкомнатная квартира с видом на парк.',
  owner: { name: 'Иван Петров', phone: '8 (912) 345-67-89', notes: 'Звонить после 18:00' },
  location: {
    city_id: 1,
    district_id: 1,
    address: 'Москва, ул. Тверская, д. 7, кв. 12',
    street: 'Тверская',
    house_number: '7',
    apartment_number: '12',
    latitude: 55.7577,
    longitude: 37.6133,
  },
  attributes: { area: '54.5', rooms: '2', floor: '5', total_floors: '9', building_type: 'Кирпичный', balcony: 'Лоджия', elevator: 'true' },
}

export const PropertySubmission = Type.Object(submissionFields, { additionalProperties: false, examples: [submissionExample] })
export type PropertySubmission = Static<typeof PropertySubmission>

export const PropertyPatch = Type.Partial(
  Type.Object({
    ...submissionFields,
    attributes: Type.Record(Type.String(), Nullable(attributeValue), {
      maxProperties: 100,
      description: `${attributesDescription} Merged into the current attributes; null removes one.`,
    }),
  }),
  {
    additionalProperties: false,
    minProperties: 1,
    description:
      'Only the fields sent change. `owner` and `location` are replaced whole (null removes them); `attributes` are merged, a null value removing that attribute.',
    examples: [{ price: 8200000, attributes: { condition: 'Евроремонт', furniture: null } }],
  },
)
export type PropertyPatch = Static<typeof PropertyPatch>

export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Same key and body within 24 h replays the first response.' })),
})

export const ModerationReasonSchema = Type.Object({
  code: Type.String({ examples: ['price_missing'] }),
  field: Nullable(Type.String()),
  message: Type.String(),
})

/** The full property of D5, as its tenant sees it. */
export const Property = Type.Object({
  id: Type.Integer(),
  status_id: Type.Integer(),
  status_name: Type.String(),
  property_type: Type.String(),
  deal_type: Type.String(),
  price: Nullable(Type.Number()),
  description: Nullable(Type.String()),
  owner: Nullable(Type.Object({ id: Type.Integer(), name: Type.String(), phone: Type.String(), notes: Nullable(Type.String()) })),
  location: Nullable(
    Type.Object({
      city_id: Type.Integer(),
      district_id: Nullable(Type.Integer()),
      residential_complex_id: Nullable(Type.Integer()),
      address: Nullable(Type.String()),
      street: Nullable(Type.String()),
      house_number: Nullable(Type.String()),
      apartment_number: Nullable(Type.String()),
      latitude: Nullable(Type.Number()),
      longitude: Nullable(Type.Number()),
      city: Named,
      district: Nullable(Named),
      residential_complex: Nullable(Named),
    }),
  ),
  attributes: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
  moderation: Nullable(
    Type.Object({ checked_at: Timestamp, reasons: Type.Array(ModerationReasonSchema) }, { description: 'The last internal check; null until one has run.' }),
  ),
  images: Type.Array(PropertyImage),
  created_at: Timestamp,
  updated_at: Timestamp,
  published_at: Nullable(Timestamp),
})
export type Property = Static<typeof Property>

/** §2.3 to the letter. */
export const PropertyListItem = Type.Object({
  id: Type.Integer(),
  property_type: Type.String(),
  deal_type: Type.String(),
  price: Nullable(Type.Number()),
  status_id: Type.Integer(),
  status_name: Type.String(),
  city: Nullable(Named),
  district: Nullable(Named),
  area: Nullable(Type.Number()),
  rooms: Nullable(Type.Integer()),
  created_at: Timestamp,
  updated_at: Timestamp,
})
export type PropertyListItem = Static<typeof PropertyListItem>

export const PropertyListQuery = Type.Object({
  status_id: Type.Optional(Type.Integer({ minimum: 1, maximum: 32767 })),
  property_type: Type.Optional(Type.Enum(propertyTypeNames)),
  deal_type: Type.Optional(Type.Enum(dealTypeNames)),
  city_id: Type.Optional(Id),
  ...PageQuery,
})
export type PropertyListQuery = Static<typeof PropertyListQuery>

export const PropertyPage = Page(PropertyListItem)

export const PropertyIdParams = Type.Object({ id: Id })

export const statusIds = seedPropertyStatuses.map((status) => status.id)

export const StatusChangeBody = Type.Object(
  { status_id: Type.Integer({ minimum: 1, maximum: 5, description: '4 withdraw, 5 close, 1 resubmit.' }) },
  { additionalProperties: false, examples: [{ status_id: 4 }] },
)
