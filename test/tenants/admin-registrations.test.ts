import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { eq } from 'drizzle-orm'
import { apiKeys, registrationRequests, tenants } from '../../src/db/schema.js'
import { digestSecret } from '../../src/lib/secrets.js'
import type { RegistrationStatus } from '../../src/modules/tenants/tenants.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { adminHeaders, submitRegistration } from '../helpers/factories.js'
import type { AdminRegistrationPage, ApprovedRegistration, ErrorBody, ValidationErrorBody } from '../helpers/responses.js'

describe('admin registration routes', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  const approve = (code: string, headers: Record<string, string> = adminHeaders) =>
    t.app.inject({ method: 'POST', url: `/admin/registrations/${code}/approve`, headers })
  const reject = (code: string, payload?: object) =>
    t.app.inject({ method: 'POST', url: `/admin/registrations/${code}/reject`, headers: adminHeaders, ...(payload ? { payload } : {}) })

  for (const [name, headers] of [
    ['no admin key', {}],
    ['a wrong admin key', { 'x-admin-key': 'wrong-key-wrong-key-wrong' }],
    ['a tenant API key', { 'x-admin-key': 'mls_live_x', 'x-api-key': 'mls_live_x' }],
  ] as const) {
    it(`refuses ${name} with 401 on every admin route, changing nothing`, async () => {
      const { request_code: code } = await submitRegistration(t.app)
      const responses = await Promise.all([
        t.app.inject({ method: 'GET', url: '/admin/registrations', headers }),
        approve(code, headers),
        t.app.inject({ method: 'POST', url: `/admin/registrations/${code}/reject`, headers, payload: {} }),
        t.app.inject({ method: 'POST', url: '/admin/cities', headers, payload: { name: 'Тюмень', country: 'RU' } }),
      ])
      for (const response of responses) {
        assert.equal(response.statusCode, 401)
        assert.deepEqual(response.json<ErrorBody>(), { detail: 'Invalid or missing admin key' })
      }
      const [row] = await t.db.select().from(registrationRequests).where(eq(registrationRequests.requestCode, code))
      assert.equal(row?.status, 'pending')
    })
  }

  it('approves: creates the tenant and a key stored only as a digest and encrypted', async () => {
    const { request_code: code } = await submitRegistration(t.app, { company_name: 'Этажи', country: 'RU' })
    const response = await approve(code)
    assert.equal(response.statusCode, 200)
    const status = response.json<ApprovedRegistration>()
    assert.deepEqual(Object.keys(status).sort(), ['api_key', 'request_code', 'status', 'tenant_id'])
    assert.equal(status.status, 'approved')

    const [tenant] = await t.db.select().from(tenants).where(eq(tenants.id, status.tenant_id))
    assert.equal(tenant?.companyName, 'Этажи')
    const keys = await t.db.select().from(apiKeys).where(eq(apiKeys.tenantId, status.tenant_id))
    assert.equal(keys.length, 1)
    assert.equal(keys[0]?.digest, digestSecret(status.api_key))
    assert.ok(status.api_key.startsWith(keys[0].displayPrefix))
    const [request] = await t.db.select().from(registrationRequests).where(eq(registrationRequests.requestCode, code))
    assert.ok(request?.apiKeyEncrypted && !request.apiKeyEncrypted.includes(status.api_key))
    assert.ok(request.decidedAt instanceof Date)
  })

  it('approves a request once: the second approval is a 409 and creates nothing', async () => {
    const { request_code: code } = await submitRegistration(t.app)
    assert.equal((await approve(code)).statusCode, 200)
    const tenantsBefore = await t.db.$count(tenants)
    const again = await approve(code)
    assert.equal(again.statusCode, 409)
    assert.match(again.json<ErrorBody>().detail, /already approved/)
    assert.equal(await t.db.$count(tenants), tenantsBefore)
  })

  it('lets only one of two concurrent approvals through', async () => {
    const { request_code: code } = await submitRegistration(t.app)
    const tenantsBefore = await t.db.$count(tenants)
    const statuses = (await Promise.all([approve(code), approve(code)])).map((response) => response.statusCode).sort()
    assert.deepEqual(statuses, [200, 409])
    assert.equal(await t.db.$count(tenants), tenantsBefore + 1)
  })

  it('rejects a pending request with a reason, which it needs; a decided one is a 409', async () => {
    const first = await submitRegistration(t.app)
    const rejected = await reject(first.request_code, { reason: 'Дубликат заявки' })
    assert.equal(rejected.statusCode, 200)
    assert.deepEqual(rejected.json<RegistrationStatus>(), { request_code: first.request_code, status: 'rejected' })
    const [row] = await t.db.select().from(registrationRequests).where(eq(registrationRequests.requestCode, first.request_code))
    assert.equal(row?.rejectReason, 'Дубликат заявки')

    const second = await submitRegistration(t.app)
    for (const payload of [undefined, {}, { reason: '' }, { reason: ' \n ' }]) {
      const refused = await reject(second.request_code, payload)
      assert.equal(refused.statusCode, 422, `${JSON.stringify(payload)}: ${refused.body}`)
      assert.match(refused.json<ErrorBody>().detail, /reason|body/)
    }
    const [waiting] = await t.db.select().from(registrationRequests).where(eq(registrationRequests.requestCode, second.request_code))
    assert.equal(waiting?.status, 'pending')

    assert.equal((await reject(first.request_code, { reason: 'Ещё раз' })).statusCode, 409)
    assert.equal((await approve(first.request_code)).statusCode, 409)
  })

  it('answers 404 for an unknown request code and 422 for an unknown body field', async () => {
    assert.equal((await approve('reg_nope')).statusCode, 404)
    assert.equal((await approve('reg_nope')).json<ErrorBody>().detail, 'Registration request not found')
    const { request_code: code } = await submitRegistration(t.app)
    const response = await reject(code, { reason: 'x', notify: true })
    assert.equal(response.statusCode, 422)
    assert.deepEqual(response.json<ValidationErrorBody>().errors[0]?.loc, ['body', 'notify'])
  })

  it('lists requests newest first, filtered by status, paginated', async () => {
    const a = await submitRegistration(t.app, { company_name: 'Список А' })
    const b = await submitRegistration(t.app, { company_name: 'Список Б' })
    const list = await t.app.inject({ method: 'GET', url: '/admin/registrations?status=pending&limit=2', headers: adminHeaders })
    assert.equal(list.statusCode, 200)
    const page = list.json<AdminRegistrationPage>()
    assert.equal(page.limit, 2)
    assert.equal(page.offset, 0)
    assert.ok(page.total >= 2)
    assert.deepEqual(
      page.items.map((item) => item.request_code),
      [b.request_code, a.request_code],
    )
    assert.equal(page.items[0]?.company_name, 'Список Б')
    assert.equal(page.items[0]?.phone, '+7 912 345-67-89')
    for (const item of page.items) assert.equal(item.status, 'pending')

    const next = await t.app.inject({ method: 'GET', url: '/admin/registrations?status=pending&limit=2&offset=1', headers: adminHeaders })
    assert.equal(next.json<AdminRegistrationPage>().items[0]?.request_code, a.request_code)

    for (const query of ['status=done', 'limit=0', 'limit=101', 'offset=-1', 'limit=abc']) {
      const bad = await t.app.inject({ method: 'GET', url: `/admin/registrations?${query}`, headers: adminHeaders })
      assert.equal(bad.statusCode, 422, query)
    }
  })
})

describe('admin routes without ADMIN_API_KEY', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({ ADMIN_API_KEY: '' })
  })
  after(() => t.close())

  it('answer 401 whatever key is sent', async () => {
    for (const headers of [{}, adminHeaders, { 'x-admin-key': '' }]) {
      const response = await t.app.inject({ method: 'GET', url: '/admin/registrations', headers })
      assert.equal(response.statusCode, 401)
    }
  })
})
