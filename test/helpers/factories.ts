import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { ADMIN_KEY } from './app.js'

export interface RegistrationInput {
  company_name?: string
  email?: string
  country?: string
  contact_name?: string
  phone?: string
}

/** A valid registration body with a unique e-mail; override any field. */
export function registrationBody(overrides: RegistrationInput = {}): RegistrationInput {
  return {
    company_name: 'Агентство «Новый дом»',
    email: `agency-${randomBytes(4).toString('hex')}@example.com`,
    contact_name: 'Мария Иванова',
    phone: '8 (912) 345-67-89',
    ...overrides,
  }
}

export async function submitRegistration(app: FastifyInstance, overrides: RegistrationInput = {}) {
  const body = registrationBody(overrides)
  const response = await app.inject({ method: 'POST', url: '/tenants/register', payload: body })
  assert.equal(response.statusCode, 201, response.body)
  const created = response.json<{ request_code: string; status: string; created_at: string }>()
  return { ...created, email: body.email! }
}

export const adminHeaders = { 'x-admin-key': ADMIN_KEY }

/** A registered, approved tenant with its API key, through the public and admin routes. */
export async function createTenant(app: FastifyInstance, overrides: RegistrationInput = {}) {
  const { request_code: requestCode, email } = await submitRegistration(app, overrides)
  const approved = await app.inject({
    method: 'POST',
    url: `/admin/registrations/${requestCode}/approve`,
    headers: adminHeaders,
  })
  assert.equal(approved.statusCode, 200, approved.body)
  const { tenant_id: tenantId, api_key: apiKey } = approved.json<{ tenant_id: number; api_key: string }>()
  return { tenantId, apiKey, requestCode, email, headers: { 'x-api-key': apiKey } }
}

export type Tenant = Awaited<ReturnType<typeof createTenant>>

/** A valid submission that passes the internal check; override any field. */
export function propertyBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
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

export async function submitProperty(app: FastifyInstance, tenant: Tenant, overrides: Record<string, unknown> = {}) {
  const response = await app.inject({ method: 'POST', url: '/properties', headers: tenant.headers, payload: propertyBody(overrides) })
  assert.equal(response.statusCode, 201, response.body)
  return response.json<{ id: number; status_id: number; owner: { id: number } | null }>()
}
