import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { Property, PropertySubmission } from '../../src/modules/properties/properties.schemas.js'
import type { RegistrationCreateBody } from '../../src/modules/tenants/tenants.schemas.js'
import { ADMIN_KEY } from './app.js'
import type { ApprovedRegistration, RegistrationCreated } from './responses.js'

/** A valid registration body with a unique e-mail; override any field. */
export function registrationBody(overrides: Partial<RegistrationCreateBody> = {}): RegistrationCreateBody {
  return {
    company_name: 'Агентство «Новый дом»',
    email: `agency-${randomBytes(4).toString('hex')}@example.com`,
    contact_name: 'Мария Иванова',
    phone: '8 (912) 345-67-89',
    ...overrides,
  }
}

/** A registration request as POST /tenants/register answers it, with the e-mail it was made with. */
export type SubmittedRegistration = RegistrationCreated & { email: string }

export async function submitRegistration(app: FastifyInstance, overrides: Partial<RegistrationCreateBody> = {}): Promise<SubmittedRegistration> {
  const body = registrationBody(overrides)
  const response = await app.inject({ method: 'POST', url: '/tenants/register', payload: body })
  assert.equal(response.statusCode, 201, response.body)
  return { ...response.json<RegistrationCreated>(), email: body.email }
}

export const adminHeaders = { 'x-admin-key': ADMIN_KEY }

/** An approved agency, and the header that authenticates its requests. */
export interface Tenant {
  tenantId: number
  apiKey: string
  requestCode: string
  email: string
  headers: { 'x-api-key': string }
}

/** A registered, approved tenant with its API key, through the public and admin routes. */
export async function createTenant(app: FastifyInstance, overrides: Partial<RegistrationCreateBody> = {}): Promise<Tenant> {
  const { request_code: requestCode, email } = await submitRegistration(app, overrides)
  const approved = await app.inject({
    method: 'POST',
    url: `/admin/registrations/${requestCode}/approve`,
    headers: adminHeaders,
  })
  assert.equal(approved.statusCode, 200, approved.body)
  const { tenant_id: tenantId, api_key: apiKey } = approved.json<ApprovedRegistration>()
  return { tenantId, apiKey, requestCode, email, headers: { 'x-api-key': apiKey } }
}

/**
 * A valid submission that passes the internal check; override any field. A test that sends
 * what the schema refuses spreads this into an object of its own.
 */
export function propertyBody(overrides: Partial<PropertySubmission> = {}): PropertySubmission {
  return {
    property_type: 'Квартира',
    deal_type: 'Продажа',
    price: 8500000,
    description: 'Светлая двухкомнатная квартира с видом на парк.',
    owner: { name: 'Иван Петров', phone: '8 (912) 345-67-89', notes: 'Звонить после 18:00' },
    location: { city_id: 1, district_id: 1, address: `Москва, ул. Тверская, д. ${randomBytes(3).toString('hex')}` },
    attributes: { area: '54.5', rooms: '2', floor: '5', total_floors: '9', building_type: 'Кирпичный' },
    ...overrides,
  }
}

/** POST /properties as the tenant; the property as created (waiting for the internal check). */
export async function submitProperty(app: FastifyInstance, tenant: Tenant, overrides: Partial<PropertySubmission> = {}): Promise<Property> {
  const response = await app.inject({ method: 'POST', url: '/properties', headers: tenant.headers, payload: propertyBody(overrides) })
  assert.equal(response.statusCode, 201, response.body)
  return response.json<Property>()
}
