import { PropertyImage } from '../images/images.schemas.js'
import { Type, type Static } from 'typebox'
import { revisionStatuses } from '../../db/schema.js'
import { seedDealTypes, seedPropertyStatuses, seedPropertyTypes } from '../../db/seed/dictionaries.js'
import { asStoredText, Id, Int32, Named, Nullable, CursorPage, CursorPageQuery, StringEnum, Timestamp, PathId } from '../../lib/schemas.js'
import { PROPERTY_NOT_FOUND } from '../../lib/errors.js'

export const propertyTypeNames = seedPropertyTypes.map((type) => type.name)
export const dealTypeNames = seedDealTypes.map((type) => type.name)
export const statusNames = seedPropertyStatuses.map((status) => status.name)

export const PropertyTypeName = StringEnum('PropertyTypeName', propertyTypeNames, 'A property type, exact and case-sensitive.')
export const DealTypeName = StringEnum('DealTypeName', dealTypeNames, 'A deal type, exact and case-sensitive.')
const StatusName = StringEnum('PropertyStatusName', statusNames, 'The name of a property status.')
export const StatusId = Int32({
  minimum: 1,
  maximum: seedPropertyStatuses.length,
  description: '1 На проверке, 2 Опубликовано, 3 Отклонено, 4 Снято с публикации, 5 Сделка закрыта.',
})

/** Codes of the internal check's findings (moderation/rules.ts), stable for clients to act on. */
export const moderationReasonCodes = [
  'location_missing',
  'price_missing',
  'price_not_positive',
  'floor_above_total_floors',
  'areas_exceed_total',
  'attribute_not_applicable',
  'contacts_in_description',
  'duplicate_listing',
  'rejected_by_moderator',
  'check_failed',
]

/**
 * A decimal as a JSON number or a numeric string, within bounds either way; with `decimals`, no more
 * digits after the point than its column keeps (a price of 0.001 is refused, not stored as 0).
 */
const Decimal = (options: { minimum: number; maximum: number; example: string; decimals?: number }) =>
  Type.Union(
    [
      Type.Number({ minimum: options.minimum, maximum: options.maximum, ...(options.decimals === undefined ? {} : { 'x-max-decimals': options.decimals }) }),
      // At most 13 digits before the point; 50 characters is more than any value the column keeps.
      Type.String({
        maxLength: 50,
        'x-decimal-range': [options.minimum, options.maximum],
        pattern: `^${options.minimum < 0 ? '-?' : ''}\\d{1,13}(\\.\\d${options.decimals === undefined ? '+' : `{1,${options.decimals}}`})?$`,
      }),
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
  { title: 'OwnerInput', additionalProperties: false },
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
  { title: 'LocationInput', additionalProperties: false, description: '`latitude` and `longitude` go together: both or neither.' },
)

// No length bound: the attribute check refuses any string that is not a value of the catalogue, with a message saying which.
const attributeValue = Type.Union([Type.String(), Type.Number(), Type.Boolean()], {
  title: 'AttributeValue',
  description: 'A value as text (`"54.5"`, `"3"`, `"true"`, `"Кирпичный"`), or the JSON number or boolean itself.',
})
const attributesDescription =
  'Attribute name → value, by the catalogue of `GET /attributes`. Values are strings (`"54.5"`, `"3"`, `"true"`, `"Кирпичный"`); JSON numbers and booleans are accepted too.'

/** Characters an external id may not have anywhere: control characters (C0, DEL, C1). */
const externalIdCharacter = '[^\\x00-\\x1F\\x7F-\\x9F]'
/**
 * … nor at either end: whitespace, nor an invisible format character (a zero-width space, a
 * soft hyphen), so that an id never differs from another by what a person cannot see.
 */
const externalIdEnd = '[^\\s\\p{Cf}\\x00-\\x1F\\x7F-\\x9F]'
export const EXTERNAL_ID_MAX_LENGTH = 100
/** `.` and `..`, which a URL's path reads as "here" and "up": by-external-id routes could not name them. */
const pathDots = '(?!\\.\\.?$)'
export const externalIdPattern = new RegExp(`^${pathDots}${externalIdEnd}(?:${externalIdCharacter}*${externalIdEnd})?$`, 'u')
export const EXTERNAL_ID_RULE = `must be 1 to ${EXTERNAL_ID_MAX_LENGTH} characters, without control characters, must not begin or end with a space or an invisible character, and must not be . or ..`

export const ExternalId = Type.String({
  title: 'ExternalId',
  minLength: 1,
  maxLength: EXTERNAL_ID_MAX_LENGTH,
  pattern: externalIdPattern.source,
  description:
    'The agency’s own id of the listing (its CRM’s), unique within the agency; compared exactly (case and spaces count). Never shown in the public catalogue.',
  examples: ['CRM-10492'],
  'x-message': EXTERNAL_ID_RULE,
})

const submissionFields = {
  property_type: PropertyTypeName,
  deal_type: DealTypeName,
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

export const PropertySubmission = Type.Object(submissionFields, { title: 'PropertySubmission', additionalProperties: false, examples: [submissionExample] })
export type PropertySubmission = Static<typeof PropertySubmission>

/** POST /properties: a submission, with the agency's own id if it has one. */
export const NewPropertySubmission = Type.Object(
  { ...submissionFields, external_id: Type.Optional(Nullable(ExternalId)) },
  { title: 'NewPropertySubmission', additionalProperties: false, examples: [{ ...submissionExample, external_id: 'CRM-10492' }] },
)
export type NewPropertySubmission = Static<typeof NewPropertySubmission>

export const PropertyPatch = Type.Partial(
  Type.Object({
    ...submissionFields,
    external_id: Nullable(ExternalId),
    attributes: Type.Record(Type.String(), Nullable(attributeValue), {
      maxProperties: 100,
      description: `${attributesDescription} Merged into the current attributes; null removes one.`,
    }),
  }),
  {
    title: 'PropertyPatch',
    additionalProperties: false,
    minProperties: 1,
    description:
      'Only the fields sent change. `owner` and `location` are replaced whole (null removes them); `attributes` are merged, a null value removing that attribute. `external_id` alone is bookkeeping: setting or clearing it sends nothing to the check.',
    examples: [{ price: 8200000, attributes: { condition: 'Евроремонт', furniture: null } }],
  },
)
export type PropertyPatch = Static<typeof PropertyPatch>

export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Same key and body within 24 h replays the first response.' })),
})

export const ModerationReasonSchema = Type.Object(
  {
    code: asStoredText(StringEnum('ModerationReasonCode', moderationReasonCodes, 'What the internal check found; stable, for clients to act on.')),
    field: Nullable(Type.String({ maxLength: 200, description: 'The field concerned, as a path (`attributes.floor`), or null.' })),
    message: Type.String({ maxLength: 2000 }),
  },
  { title: 'ModerationReason' },
)

const Name = Type.String({ maxLength: 200 })
const attributeValueOut = Type.Union([Text(200), Type.Number(), Type.Boolean()])
/** Attributes as stored: typed values (numbers as numbers, bools as booleans). */
const StoredAttributes = Type.Record(Type.String(), attributeValueOut, { maxProperties: 100, description: 'Attribute name → typed value.' })

const Location = Type.Object(
  {
    city_id: Id,
    district_id: Nullable(Id),
    residential_complex_id: Nullable(Id),
    address: Nullable(Text(500)),
    street: Nullable(Text(200)),
    house_number: Nullable(Text(50)),
    apartment_number: Nullable(Text(50)),
    latitude: Nullable(Type.Number({ minimum: -90, maximum: 90 })),
    longitude: Nullable(Type.Number({ minimum: -180, maximum: 180 })),
    city: Named,
    district: Nullable(Named),
    residential_complex: Nullable(Named),
  },
  { title: 'Location' },
)

export const ModerationResultSchema = Type.Object(
  { checked_at: Timestamp, reasons: Type.Array(ModerationReasonSchema, { maxItems: 100 }) },
  { title: 'ModerationResult', description: 'The last internal check; null until one has run.' },
)

export const RevisionStatusName = asStoredText(
  StringEnum('RevisionStatus', [...revisionStatuses], '`pending_review` while the internal check has yet to pass it, `rejected` when it did not.'),
)

export const PropertyRevision = Type.Object(
  {
    status: RevisionStatusName,
    submitted_at: Timestamp,
    moderation: Nullable(ModerationResultSchema),
  },
  {
    title: 'PropertyRevision',
    description:
      'A change to a published listing that the internal check has not passed: the listing shows it, while the catalogue goes on showing the approved version. Null when there is none.',
  },
)

/** The full property, as its agency sees it: with a revision, the revision's fields. */
export const Property = Type.Object(
  {
    id: Id,
    external_id: Nullable(ExternalId),
    status_id: StatusId,
    status_name: asStoredText(StatusName),
    property_type: asStoredText(PropertyTypeName),
    deal_type: asStoredText(DealTypeName),
    price: Nullable(Type.Number({ minimum: 0 })),
    description: Nullable(Text(10_000)),
    owner: Nullable(
      Type.Object(
        {
          id: Id,
          name: Name,
          phone: Type.String({ maxLength: 64, description: 'International form, `+7 912 345-67-89`, an extension after it: `+7 912 345-67-89 доб. 5`.' }),
          notes: Nullable(Text(5000)),
        },
        { title: 'Owner' },
      ),
    ),
    location: Nullable(Location),
    attributes: StoredAttributes,
    moderation: Nullable(ModerationResultSchema),
    revision: Nullable(PropertyRevision),
    images: Type.Array(PropertyImage, { maxItems: 10_000, description: 'In display order; at most IMAGE_MAX_PER_PROPERTY (50 by default).' }),
    created_at: Timestamp,
    updated_at: Timestamp,
    published_at: Nullable(Timestamp),
  },
  { title: 'Property' },
)
export type Property = Static<typeof Property>

/** A list item of the agency's own properties, exactly as the interface gives it. */
export const PropertyListItem = Type.Object(
  {
    id: Id,
    external_id: Nullable(ExternalId),
    property_type: asStoredText(PropertyTypeName),
    deal_type: asStoredText(DealTypeName),
    price: Nullable(Type.Number({ minimum: 0 })),
    status_id: StatusId,
    status_name: asStoredText(StatusName),
    city: Nullable(Named),
    district: Nullable(Named),
    area: Nullable(Type.Number({ minimum: 0 })),
    rooms: Nullable(Int32({ minimum: 0 })),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'PropertyListItem' },
)
export type PropertyListItem = Static<typeof PropertyListItem>

export const PropertyListQuery = Type.Object({
  status_id: Type.Optional(Int32({ minimum: 1, maximum: 32767, description: 'Only listings in this status.' })),
  property_type: Type.Optional(PropertyTypeName),
  deal_type: Type.Optional(DealTypeName),
  city_id: Type.Optional(Id),
  ...CursorPageQuery,
})
export type PropertyListQuery = Static<typeof PropertyListQuery>

export const PropertyPage = CursorPage(PropertyListItem, 'PropertyPage')

export const PropertyIdParams = Type.Object({ id: PathId(PROPERTY_NOT_FOUND) })
export const ExternalIdParams = Type.Object({ external_id: ExternalId })

export const statusIds = seedPropertyStatuses.map((status) => status.id)

export const StatusChangeBody = Type.Object(
  { status_id: Int32({ minimum: 1, maximum: 5, description: '4 withdraw, 5 close, 1 resubmit.' }) },
  { title: 'StatusChange', additionalProperties: false, examples: [{ status_id: 4 }] },
)

/** The 409 of an illegal move: the moves possible from the current status. */
export const StatusConflict = Type.Object(
  {
    detail: Type.String({ maxLength: 2000 }),
    allowed_moves: Type.Array(StatusId, { maxItems: 5, description: 'The statuses the listing may move to from its current one; empty when none.' }),
  },
  {
    title: 'StatusConflict',
    examples: [{ detail: 'A listing in status 1 cannot move to status 4; allowed moves from here: none.', allowed_moves: [] }],
  },
)
