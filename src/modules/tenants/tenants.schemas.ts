import { Type, type Static } from 'typebox'
import { Page, PageQuery, Timestamp } from '../../lib/schemas.js'
import { API_KEY_PREFIX } from '../../lib/secrets.js'

export const RegistrationStatusValue = Type.Enum(['pending', 'approved', 'rejected'], {
  description: 'State of the request.',
})

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
    additionalProperties: false,
    examples: [
      { company_name: 'Агентство «Новый дом»', email: 'info@novydom.example', country: 'RU', contact_name: 'Мария Иванова', phone: '8 (912) 345-67-89' },
    ],
  },
)
export type RegistrationCreateBody = Static<typeof RegistrationCreateBody>

export const RegistrationCreated = Type.Object({
  request_code: Type.String({ description: 'Keep it: with the e-mail it reads the request’s status and, once approved, the API key.' }),
  status: Type.Literal('pending'),
  created_at: Timestamp,
})

export const RegistrationCodeParams = Type.Object({
  request_code: Type.String({ minLength: 1, maxLength: 100 }),
})

export const RegistrationStatusQuery = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 254, description: 'The e-mail given at registration (any letter case).' }),
})

/** §2.5 to the letter: `tenant_id` and `api_key` only when approved. */
export const RegistrationStatus = Type.Object(
  {
    request_code: Type.String(),
    status: RegistrationStatusValue,
    tenant_id: Type.Optional(Type.Integer({ description: 'Present only when approved.' })),
    api_key: Type.Optional(Type.String({ description: `Present only when approved. Starts with \`${API_KEY_PREFIX}\`; send it as \`X-API-Key\`.` })),
  },
  {
    examples: [
      { request_code: 'reg_3qJ0s1Yp8Zk2mW9xT4vB6nQe', status: 'pending' },
      { request_code: 'reg_3qJ0s1Yp8Zk2mW9xT4vB6nQe', status: 'approved', tenant_id: 1, api_key: `${API_KEY_PREFIX}…` },
    ],
  },
)
export type RegistrationStatus = Static<typeof RegistrationStatus>

export const TenantMe = Type.Object({
  tenant_id: Type.Integer(),
  company_name: Type.String(),
  email: Type.String(),
  country: Type.String(),
  created_at: Timestamp,
})

export const AdminRegistrationListQuery = Type.Object({
  status: Type.Optional(RegistrationStatusValue),
  ...PageQuery,
})

export const AdminRegistration = Type.Object({
  request_code: Type.String(),
  status: RegistrationStatusValue,
  company_name: Type.String(),
  email: Type.String(),
  country: Type.String(),
  contact_name: Type.Union([Type.String(), Type.Null()]),
  phone: Type.Union([Type.String(), Type.Null()]),
  tenant_id: Type.Union([Type.Integer(), Type.Null()]),
  reject_reason: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  decided_at: Type.Union([Timestamp, Type.Null()]),
})
export type AdminRegistration = Static<typeof AdminRegistration>

export const AdminRegistrationPage = Page(AdminRegistration)

export const RejectBody = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: 'Why; kept for the operators.' })) },
  { additionalProperties: false },
)
