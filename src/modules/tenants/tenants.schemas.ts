import { Type, type Static } from 'typebox'
import { Id, Nullable, OneOf, Page, PageQuery, Timestamp } from '../../lib/schemas.js'
import { API_KEY_PREFIX } from '../../lib/secrets.js'

export const RegistrationStatusValue = Type.Enum(['pending', 'approved', 'rejected'], {
  type: 'string',
  title: 'RegistrationState',
  description: 'State of the request.',
})

const Country = Type.String({ pattern: '^[A-Z]{2}$', maxLength: 2, description: 'ISO 3166-1 alpha-2.' })
const RequestCode = Type.String({ maxLength: 100, pattern: '^reg_[A-Za-z0-9_-]+$', description: 'The code of the registration request.' })
const CompanyName = Type.String({ maxLength: 200 })
const Email = Type.String({ format: 'email', maxLength: 254 })
const Phone = Type.String({ maxLength: 40 })

export const RegistrationCreateBody = Type.Object(
  {
    company_name: Type.String({ minLength: 1, maxLength: 200, description: 'The agency’s name.' }),
    email: Type.String({ format: 'email', maxLength: 254, description: 'Contact e-mail; needed to read the request’s status.' }),
    country: Type.Optional(
      Type.String({
        pattern: '^[A-Z]{2}$',
        default: 'RU',
        description: 'ISO 3166-1 alpha-2 country of the agency; phones of its owners are read as this country’s.',
      }),
    ),
    contact_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
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
  request_code: Type.String({ minLength: 1, maxLength: 100 }),
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
    api_key: Type.String({
      maxLength: 200,
      pattern: `^${API_KEY_PREFIX}[A-Za-z0-9_-]+$`,
      description: `The tenant’s API key; send it as \`X-API-Key\`.`,
    }),
  },
  {
    title: 'RegistrationApproved',
    examples: [{ request_code: requestCode, status: 'approved', tenant_id: 1, api_key: `${API_KEY_PREFIX}Qm9yaXNfcmVhbHR5X2tleV9leGFtcGxlXzAxMjM0NTY3` }],
  },
)

/** The registration status: `tenant_id` and `api_key` only when approved, told apart by `status`. */
export const RegistrationStatus = OneOf([RegistrationPending, RegistrationApproved, RegistrationRejected], 'status', {
  title: 'RegistrationStatus',
  description: 'The request’s state; an approved one carries the tenant’s id and API key.',
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
    reject_reason: Nullable(Type.String({ maxLength: 2000 })),
    created_at: Timestamp,
    decided_at: Nullable(Timestamp),
  },
  { title: 'AdminRegistration' },
)
export type AdminRegistration = Static<typeof AdminRegistration>

export const AdminRegistrationPage = Page(AdminRegistration, 'AdminRegistrationPage')

export const RejectBody = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: 'Why; kept for the operators.' })) },
  { title: 'RegistrationRejection', additionalProperties: false },
)
