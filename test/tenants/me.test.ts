import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { eq } from 'drizzle-orm'
import { apiKeys } from '../../src/db/schema.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/factories.js'
import type { TenantMe } from '../helpers/responses.js'

describe('GET /tenants/me and the API key check', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  const me = (headers: Record<string, string>) => t.app.inject({ method: 'GET', url: '/tenants/me', headers })

  it('shows the tenant behind the key, and each tenant sees only itself', async () => {
    const first = await createTenant(t.app, { company_name: 'Первое агентство', email: 'First@Agency.example', country: 'RU' })
    const second = await createTenant(t.app, { company_name: 'Алматы Недвижимость', country: 'KZ', phone: '+7 701 234 5678' })

    const response = await me(first.headers)
    assert.equal(response.statusCode, 200)
    const body = response.json<TenantMe>()
    assert.deepEqual(Object.keys(body).sort(), ['company_name', 'country', 'created_at', 'email', 'tenant_id'])
    assert.equal(body.tenant_id, first.tenantId)
    assert.equal(body.company_name, 'Первое агентство')
    assert.equal(body.email, 'First@Agency.example')
    assert.equal(body.country, 'RU')
    assert.match(body.created_at, /\+00:00$/)

    const other = (await me(second.headers)).json<TenantMe>()
    assert.equal(other.tenant_id, second.tenantId)
    assert.equal(other.country, 'KZ')
  })

  const rejected: [string, Record<string, string>][] = [
    ['no key', {}],
    ['an empty key', { 'x-api-key': '' }],
    ['an unknown key', { 'x-api-key': 'mls_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }],
    ['the key in another header', { authorization: 'Bearer mls_live_x' }],
  ]
  for (const [name, headers] of rejected) {
    it(`answers 401 with the exact detail for ${name}`, async () => {
      const response = await me(headers)
      assert.equal(response.statusCode, 401)
      assert.equal(response.body, '{"detail":"Invalid or missing API key"}')
      assert.match(response.headers['content-type'] as string, /^application\/json/)
    })
  }

  it('refuses a revoked key', async () => {
    // Revoked before this process has seen it: known keys are cached for KEY_CACHE_TTL_MS.
    const tenant = await createTenant(t.app)
    await t.db.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.tenantId, tenant.tenantId))
    assert.equal((await me(tenant.headers)).statusCode, 401)
  })
})

describe('the rate limit of authenticated routes', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_API_KEY_PER_MINUTE: '2' })
  })
  after(() => t.close())

  it('counts requests per API key, not per address or agency', async () => {
    const a = await createTenant(t.app)
    const b = await createTenant(t.app, { email: 'b@agency.example' })
    const call = (headers: Record<string, string>) => t.app.inject({ method: 'GET', url: '/tenants/me', headers })
    // The agency's second key, made with the first key's first request.
    const created = await t.app.inject({ method: 'POST', url: '/tenants/me/api-keys', headers: a.headers, payload: {} })
    assert.equal(created.statusCode, 201, created.body)
    const secondKey = { 'x-api-key': created.json<{ key: string }>().key }
    assert.equal((await call(a.headers)).statusCode, 200)
    const limited = await call(a.headers)
    assert.equal(limited.statusCode, 429)
    assert.ok(limited.headers['retry-after'])
    assert.equal((await call(secondKey)).statusCode, 200)
    assert.equal((await call(secondKey)).statusCode, 200)
    assert.equal((await call(secondKey)).statusCode, 429)
    assert.equal((await call(b.headers)).statusCode, 200)
  })
})
