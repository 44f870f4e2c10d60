import { Type, type Static } from 'typebox'
import { Id, Int32, Nullable, OneLineName, OneOf, Page, PageQuery, Timestamp, PathId } from '../../lib/schemas.js'
import { API_KEY_NOT_FOUND, TENANT_NOT_FOUND, REGISTRATION_NOT_FOUND } from '../../lib/errors.js'
import { API_KEY_PREFIX } from '../../lib/secrets.js'

/** The longest reason an operator may give a rejection. */
export const MAX_REJECT_REASON_LENGTH = 2000

export const RegistrationStatusValue = Type.Enum(['pending', 'approved', 'rejected'], {
  type: 'string',
  title: 'RegistrationState',
  description: 'State of the request.',
})

const Country = Type.String({ pattern: '^[A-Z]{2}$', maxLength: 2, description: 'ISO 3166-1 alpha-2.' })
const RequestCode = Type.String({ maxLength: 100, pattern: '^reg_[A-Za-z0-9_-]+$', description: 'The code of the registration request.' })
const CompanyName = Type.String({ maxLength: 200 })
/** An e-mail whose domain (and local part) may be written in any script: `info@агентство.рф`. */
const Email = Type.String({ format: 'idn-email', maxLength: 254 })
/** The international form, with its extension if any: `+7 495 123-45-67 доб. 12`. */
const Phone = Type.String({ maxLength: 64 })

export const RegistrationCreateBody = Type.Object(
  {
    company_name: OneLineName('The agency’s name.'),
    email: { ...Email, description: 'Contact e-mail; needed to read the request’s status. The domain may be written in any script.' },
    country: Type.Optional(
      Type.String({
        pattern: '^[A-Z]{2}$',
        default: 'RU',
        description: 'ISO 3166-1 alpha-2 country of the agency; phones of its owners are read as this country’s.',
      }),
    ),
    contact_name: Type.Optional(OneLineName()),
    phone: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'Any usual format; normalised for `country`.' })),
  },
  {
    title: 'RegistrationRequest',
    additionalProperties: false,
    examples: [
      { company_name: 'Агентство «Новый дом»', email: 'info@novydom.example', country: 'RU', contact_name: 'Мария Иванова', phone: '8 (912) 345-67-89' },
    ],
  },
)
export type RegistrationCreateBody = Static<typeof RegistrationCreateBody>

export const RegistrationCreated = Type.Object(
  {
    request_code: { ...RequestCode, description: 'Keep it: with the e-mail it reads the request’s status and, once approved, the API key.' },
    status: Type.Literal('pending'),
    created_at: Timestamp,
  },
  { title: 'RegistrationCreated' },
)

export const RegistrationCodeParams = Type.Object({
  // No request has a longer code: one is as unknown as any other.
  request_code: Type.String({ minLength: 1, maxLength: 100, 'x-not-found': REGISTRATION_NOT_FOUND }),
})

export const RegistrationStatusQuery = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 254, description: 'The e-mail given at registration (any letter case).' }),
})

const requestCode = 'reg_3qJ0s1Yp8Zk2mW9xT4vB6nQe'

const RegistrationPending = Type.Object({ request_code: RequestCode, status: Type.Literal('pending') }, { title: 'RegistrationPending' })
const RegistrationRejected = Type.Object({ request_code: RequestCode, status: Type.Literal('rejected') }, { title: 'RegistrationRejected' })
const RegistrationApproved = Type.Object(
  {
    request_code: RequestCode,
    status: Type.Literal('approved'),
    tenant_id: Id,
    api_key: Type.Optional(
      Type.String({
        maxLength: 200,
        pattern: `^${API_KEY_PREFIX}[A-Za-z0-9_-]+$`,
        description: `The API key issued on approval; send it as \`X-API-Key\`. Present while that key is active: once it is revoked (or has expired), the lookup no longer shows it.`,
      }),
    ),
  },
  {
    title: 'RegistrationApproved',
    examples: [{ request_code: requestCode, status: 'approved', tenant_id: 1, api_key: `${API_KEY_PREFIX}Qm9yaXNfcmVhbHR5X2tleV9leGFtcGxlXzAxMjM0NTY3` }],
  },
)

/** The registration status: `tenant_id` and `api_key` only when approved, told apart by `status`. */
export const RegistrationStatus = OneOf([RegistrationPending, RegistrationApproved, RegistrationRejected], 'status', {
  title: 'RegistrationStatus',
  description: 'The request’s state; an approved one carries the tenant’s id and, while it is active, the API key issued on approval.',
})
export type RegistrationStatus = Static<typeof RegistrationStatus>

export const TenantMe = Type.Object(
  {
    tenant_id: Id,
    company_name: CompanyName,
    email: Email,
    country: Country,
    created_at: Timestamp,
  },
  { title: 'Tenant' },
)

export const AdminRegistrationListQuery = Type.Object({
  status: Type.Optional(RegistrationStatusValue),
  ...PageQuery,
})

export const AdminRegistration = Type.Object(
  {
    request_code: RequestCode,
    status: RegistrationStatusValue,
    company_name: CompanyName,
    email: Email,
    country: Country,
    contact_name: Nullable(Type.String({ maxLength: 200 })),
    phone: Nullable(Phone),
    tenant_id: Nullable(Id),
    reject_reason: Nullable(Type.String({ maxLength: MAX_REJECT_REASON_LENGTH })),
    created_at: Timestamp,
    decided_at: Nullable(Timestamp),
  },
  { title: 'AdminRegistration' },
)
export type AdminRegistration = Static<typeof AdminRegistration>

export const AdminRegistrationPage = Page(AdminRegistration, 'AdminRegistrationPage')

export const RejectBody = Type.Object(
  {
    reason: Type.String({ minLength: 1, maxLength: MAX_REJECT_REASON_LENGTH, description: 'Why; kept for the operators. Not blank.' }),
  },
  { title: 'RegistrationRejection', additionalProperties: false },
)

// ---------------------------------------------------------------------------------------
// API keys and suspension.

/** The most active (neither revoked nor expired) keys an agency may hold at once. */
export const MAX_ACTIVE_KEYS = 20

/** A time that may be absent, with what it means. */
const NullableTimestamp = (description: string) => Type.Union([Timestamp, Type.Null()], { description })

const KeyPrefix = Type.String({
  maxLength: 20,
  description: `The key’s first 13 characters (\`${API_KEY_PREFIX}\` and four more), enough to tell keys apart; never the key.`,
  examples: [`${API_KEY_PREFIX}Qm9y`],
})

const apiKeyFields = {
  id: Id,
  name: Nullable(Type.String({ maxLength: 100, description: 'The agency’s label for the key; null for the key issued on approval.' })),
  prefix: KeyPrefix,
  created_at: Timestamp,
  last_used_at: NullableTimestamp(
    'When the key last authenticated a request, written at most once a minute per key and API process (so up to two minutes behind with several); null if never.',
  ),
  expires_at: NullableTimestamp('From then on the key is refused; null never expires.'),
  revoked_at: NullableTimestamp('When the key was revoked; null while it is not.'),
}

export const ApiKey = Type.Object(apiKeyFields, {
  title: 'ApiKey',
  description: 'An API key as its agency sees it: never the key itself, which is shown once, at creation.',
  examples: [
    {
      id: 7,
      name: 'CRM export',
      prefix: `${API_KEY_PREFIX}Qm9y`,
      created_at: '2026-11-22T09:15:02.123+00:00',
      last_used_at: '2026-11-23T18:40:11.000+00:00',
      expires_at: '2027-11-22T09:15:02.123+00:00',
      revoked_at: null,
    },
  ],
})
export type ApiKey = Static<typeof ApiKey>

export const CreatedApiKey = Type.Object(
  {
    ...apiKeyFields,
    key: Type.String({
      maxLength: 200,
      pattern: `^${API_KEY_PREFIX}[A-Za-z0-9_-]+$`,
      description: 'The key, shown this once: only its digest is stored. Send it as `X-API-Key`.',
    }),
  },
  {
    title: 'ApiKeyCreated',
    examples: [
      {
        id: 8,
        name: 'Rotation 2026-11',
        prefix: `${API_KEY_PREFIX}b3Bl`,
        created_at: '2026-11-22T09:15:02.123+00:00',
        last_used_at: null,
        expires_at: null,
        revoked_at: null,
        key: `${API_KEY_PREFIX}b3Blbl9tbHNfcm90YXRpb25fZXhhbXBsZV8wMTIzNDU2`,
      },
    ],
  },
)
export type CreatedApiKey = Static<typeof CreatedApiKey>

export const ApiKeyCreateBody = Type.Object(
  {
    name: Type.Optional(OneLineName('A label to tell the key apart (“CRM export”): one line.', 100)),
    expires_in_days: Type.Optional(
      Int32({ minimum: 1, maximum: 3650, description: 'Days until the key expires, 1 to 3650; without it the key does not expire.' }),
    ),
  },
  { title: 'ApiKeyCreate', additionalProperties: false, examples: [{ name: 'CRM export', expires_in_days: 365 }] },
)
export type ApiKeyCreateBody = Static<typeof ApiKeyCreateBody>

export const ApiKeyPage = Page(ApiKey, 'ApiKeyPage')
export const ApiKeyListQuery = Type.Object(PageQuery)
export const ApiKeyIdParams = Type.Object({ id: PathId(API_KEY_NOT_FOUND) })

export const TenantIdParams = Type.Object({ tenant_id: PathId(TENANT_NOT_FOUND) })
export const TenantApiKeyParams = Type.Object({ tenant_id: PathId(TENANT_NOT_FOUND), id: PathId(API_KEY_NOT_FOUND) })

export const AdminTenant = Type.Object(
  {
    tenant_id: Id,
    company_name: CompanyName,
    email: Email,
    country: Country,
    contact_name: Nullable(Type.String({ maxLength: 200 })),
    phone: Nullable(Phone),
    created_at: Timestamp,
    suspended_at: NullableTimestamp('Since when the agency is suspended; null while it is not.'),
  },
  { title: 'AdminTenant', description: 'An agency as operators see it.' },
)
export type AdminTenant = Static<typeof AdminTenant>
