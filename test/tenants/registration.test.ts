import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { eq } from 'drizzle-orm'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { registrationRequests } from '../../src/db/schema.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import type { RegistrationStatus } from '../../src/modules/tenants/tenants.schemas.js'
import { adminHeaders, createTenant, registrationBody, submitRegistration } from '../helpers/factories.js'
import type { ErrorBody, RegistrationCreated, TenantMe, ValidationErrorBody } from '../helpers/responses.js'

describe('POST /tenants/register', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  it('creates a pending request with an unguessable code and stores the normalised phone', async () => {
    const body = registrationBody({ email: 'Info@Agency.Example', phone: '8 (912) 345-67-89' })
    const response = await t.app.inject({ method: 'POST', url: '/tenants/register', payload: body })
    assert.equal(response.statusCode, 201)
    const created = response.json<RegistrationCreated>()
    assert.deepEqual(Object.keys(created).sort(), ['created_at', 'request_code', 'status'])
    assert.equal(created.status, 'pending')
    assert.match(created.request_code, /^reg_[A-Za-z0-9_-]{24}$/)
    assert.match(created.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/)
    assert.equal(response.headers.location, `/tenants/register/${created.request_code}`)

    const [row] = await t.db.select().from(registrationRequests).where(eq(registrationRequests.requestCode, created.request_code))
    assert.equal(row?.phone, '+7 912 345-67-89')
    assert.equal(row?.country, 'RU')
    assert.equal(row?.status, 'pending')
    assert.equal(row?.tenantId, null)
  })

  it('reads phones as the given country’s', async () => {
    const { request_code: code } = await submitRegistration(t.app, { country: 'KZ', phone: '8 701 234 5678' })
    const [row] = await t.db.select().from(registrationRequests).where(eq(registrationRequests.requestCode, code))
    assert.equal(row?.phone, '+7 701 234-56-78')
    assert.equal(row?.country, 'KZ')
  })

  it('takes a phone pasted with a line break or a zero-width space after it, as one with blanks', async () => {
    for (const phone of ['8 912 345-67-89   ', '8 912 345-67-89\n', '8 912 345-67-89\u200b']) {
      const { request_code: code } = await submitRegistration(t.app, { phone })
      const [row] = await t.db.select().from(registrationRequests).where(eq(registrationRequests.requestCode, code))
      assert.equal(row?.phone, '+7 912 345-67-89', JSON.stringify(phone))
    }
  })

  it('takes an e-mail whose domain is written in Cyrillic, and finds the request by it in any letter case', async () => {
    const { request_code: code } = await submitRegistration(t.app, { email: 'Info@Агентство.рф' })
    const lookup = await t.app.inject({ url: `/tenants/register/${code}`, query: { email: 'info@АГЕНТСТВО.РФ' } })
    assert.equal(lookup.statusCode, 200, lookup.body)
    const [row] = await t.db.select().from(registrationRequests).where(eq(registrationRequests.requestCode, code))
    assert.equal(row?.email, 'Info@Агентство.рф')
    for (const email of ['info@агентство', 'info@агент ство.рф', '@агентство.рф']) {
      const refused = await t.app.inject({ method: 'POST', url: '/tenants/register', payload: registrationBody({ email }) })
      assert.equal(refused.statusCode, 422, `${email}: ${refused.body}`)
    }
  })

  it('refuses an e-mail with an invisible character in it, as pasted with the address', async () => {
    for (const email of [
      'info@agency.example\u200b',
      'info@agen\u200bcy.example',
      'in\u00adfo@agency.example',
      'info@agency.example\u0085',
      // Letters and marks that show nothing: a Hangul filler, a grapheme joiner, a variation selector.
      'info\u3164@agency.example',
      'info\u034f@agency.example',
      'info\ufe0f@agency.example',
    ]) {
      const refused = await t.app.inject({ method: 'POST', url: '/tenants/register', payload: registrationBody({ email }) })
      assert.equal(refused.statusCode, 422, `${JSON.stringify(email)}: ${refused.body}`)
      assert.deepEqual(
        refused.json<ValidationErrorBody>().errors.map((error) => error.loc),
        [['body', 'email']],
      )
    }
  })

  it('finds a request by its e-mail whatever form of the domain the applicant typed it in', async () => {
    const { request_code: code } = await submitRegistration(t.app, { email: 'info@ＡＧＥＮＣＹ.example' })
    for (const email of ['info@agency.example', 'INFO@Agency.Example', 'info@ＡＧＥＮＣＹ.example']) {
      const lookup = await t.app.inject({ url: `/tenants/register/${code}`, query: { email } })
      assert.equal(lookup.statusCode, 200, `${email}: ${lookup.body}`)
    }
    const other = await t.app.inject({ url: `/tenants/register/${code}`, query: { email: 'info@agency.example.ru' } })
    assert.equal(other.statusCode, 404, other.body)
  })

  it('refuses names that are blank, invisible characters included, or more than one line, naming the field', async () => {
    const cases: [field: string, value: string][] = [
      ['contact_name', '   '],
      ['company_name', '\u200b\u00a0'],
      ['company_name', 'Агентство\n«Новый дом»'],
      ['contact_name', 'Мария\u0007'],
    ]
    for (const [field, value] of cases) {
      const response = await t.app.inject({ method: 'POST', url: '/tenants/register', payload: registrationBody({ [field]: value }) })
      assert.equal(response.statusCode, 422, `${field} ${JSON.stringify(value)}: ${response.body}`)
      assert.deepEqual(response.json<ValidationErrorBody>().errors[0]?.loc, ['body', field])
    }
  })

  it('gives every request a different code', async () => {
    const codes = new Set<string>()
    for (let i = 0; i < 5; i++) codes.add((await submitRegistration(t.app)).request_code)
    assert.equal(codes.size, 5)
  })

  const invalidBodies: [string, Record<string, unknown>, string[]][] = [
    ['no company_name', { email: 'a@b.ru' }, ['body', 'company_name']],
    ['no email', { company_name: 'A' }, ['body', 'email']],
    ['a malformed email', { company_name: 'A', email: 'not-an-email' }, ['body', 'email']],
    ['an unknown field', { company_name: 'A', email: 'a@b.ru', tenant_id: 5 }, ['body', 'tenant_id']],
    ['a lower-case country', { company_name: 'A', email: 'a@b.ru', country: 'ru' }, ['body', 'country']],
    ['an unknown country', { company_name: 'A', email: 'a@b.ru', country: 'XX' }, ['body', 'country']],
    ['an unparseable phone', { company_name: 'A', email: 'a@b.ru', phone: '12' }, ['body', 'phone']],
    ['a number inside a sentence for phone', { company_name: 'A', email: 'a@b.ru', phone: 'email me 89123456789@x.ru' }, ['body', 'phone']],
    ['an empty company_name', { company_name: '', email: 'a@b.ru' }, ['body', 'company_name']],
    ['a company_name of spaces', { company_name: '   ', email: 'a@b.ru' }, ['body', 'company_name']],
    ['a number for company_name', { company_name: 42, email: 'a@b.ru' }, ['body', 'company_name']],
  ]
  for (const [name, payload, loc] of invalidBodies) {
    it(`answers 422 naming the field for ${name}, and stores nothing`, async () => {
      const before = await t.db.$count(registrationRequests)
      const response = await t.app.inject({ method: 'POST', url: '/tenants/register', payload })
      assert.equal(response.statusCode, 422, response.body)
      const body = response.json<ValidationErrorBody>()
      assert.equal(typeof body.detail, 'string')
      assert.ok(body.detail.length > 10)
      assert.ok(
        body.errors.some((error) => JSON.stringify(error.loc) === JSON.stringify(loc)),
        `expected an error at ${loc.join('.')}: ${response.body}`,
      )
      assert.equal(await t.db.$count(registrationRequests), before)
    })
  }

  it('answers 400 JSON for a body that is not JSON', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/tenants/register',
      headers: { 'content-type': 'application/json' },
      payload: '{"company_name": ',
    })
    assert.equal(response.statusCode, 400)
    assert.match(response.headers['content-type'] as string, /application\/json/)
    assert.deepEqual(response.json<ErrorBody>(), { detail: 'The request body is not valid JSON.' })
  })

  it('answers 415 JSON for a body that is not JSON at all', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/tenants/register',
      headers: { 'content-type': 'text/plain' },
      payload: 'hello',
    })
    assert.equal(response.statusCode, 415)
    assert.equal(typeof response.json<ErrorBody>().detail, 'string')
  })

  it('answers 413 for a body over 1 MiB', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/tenants/register',
      payload: { company_name: 'A', email: 'a@b.ru', contact_name: 'x'.repeat(1024 * 1024) },
    })
    assert.equal(response.statusCode, 413)
    assert.equal(response.json<ErrorBody>().detail, 'The request body is too large.')
  })
})

describe('GET /tenants/register/{request_code}', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  const statusOf = (code: string, email?: string) =>
    t.app.inject({ method: 'GET', url: `/tenants/register/${code}`, query: email === undefined ? {} : { email } })

  it('shows a pending request with exactly request_code and status', async () => {
    const { request_code: code, email } = await submitRegistration(t.app)
    const response = await statusOf(code, email)
    assert.equal(response.statusCode, 200)
    assert.deepEqual(response.json<RegistrationStatus>(), { request_code: code, status: 'pending' })
    assert.equal(response.headers['cache-control'], 'no-store')
  })

  it('compares the e-mail without regard to letter case', async () => {
    const { request_code: code } = await submitRegistration(t.app, { email: 'Case.Test@Example.COM' })
    const response = await statusOf(code, 'case.test@example.com')
    assert.equal(response.statusCode, 200)
  })

  it('finds a request by a plus-addressed e-mail written into the URL unencoded, its + read as a blank', async () => {
    const { request_code: code } = await submitRegistration(t.app, { email: 'agency+mls@example.com' })
    const unencoded = await t.app.inject({ url: `/tenants/register/${code}?email=agency+mls@example.com` })
    assert.equal(unencoded.statusCode, 200, unencoded.body)
    assert.equal((await statusOf(code, 'agency+mls@example.com')).statusCode, 200)
    assert.equal((await statusOf(code, 'agency mls@example.com')).statusCode, 200)
    assert.equal((await statusOf(code, 'agencymls@example.com')).statusCode, 404)
  })

  it('finds a request whose e-mail starts with a plus written into the URL unencoded, and one typed with a blank around it', async () => {
    const { request_code: plus } = await submitRegistration(t.app, { email: '+mls@agency.example' })
    assert.equal((await t.app.inject({ url: `/tenants/register/${plus}?email=+mls@agency.example` })).statusCode, 200)
    assert.equal((await t.app.inject({ url: `/tenants/register/${plus}?email=%2Bmls%40agency.example` })).statusCode, 200)
    assert.equal((await t.app.inject({ url: `/tenants/register/${plus}?email=mls@agency.example` })).statusCode, 404)
    const { request_code: plain } = await submitRegistration(t.app, { email: 'blank-around@agency.example' })
    assert.equal((await t.app.inject({ url: `/tenants/register/${plain}?email=%20blank-around@agency.example%20` })).statusCode, 200)
    // Both at once: the plus typed unencoded, and a blank pasted after the address.
    assert.equal((await t.app.inject({ url: `/tenants/register/${plus}?email=+mls@agency.example%20` })).statusCode, 200)
  })

  it('returns tenant_id and a working api_key once approved, on every lookup', async () => {
    const tenant = await createTenant(t.app)
    for (let i = 0; i < 2; i++) {
      const response = await statusOf(tenant.requestCode, tenant.email)
      assert.equal(response.statusCode, 200)
      assert.deepEqual(response.json<RegistrationStatus>(), {
        request_code: tenant.requestCode,
        status: 'approved',
        tenant_id: tenant.tenantId,
        api_key: tenant.apiKey,
      })
    }
    assert.match(tenant.apiKey, /^mls_live_[A-Za-z0-9_-]{43}$/)
    const me = await t.app.inject({ method: 'GET', url: '/tenants/me', headers: tenant.headers })
    assert.equal(me.statusCode, 200)
    assert.equal(me.json<TenantMe>().tenant_id, tenant.tenantId)
  })

  it('shows a rejected request without a key', async () => {
    const { request_code: code, email } = await submitRegistration(t.app)
    const rejected = await t.app.inject({
      method: 'POST',
      url: `/admin/registrations/${code}/reject`,
      headers: adminHeaders,
      payload: { reason: 'Не удалось подтвердить агентство' },
    })
    assert.equal(rejected.statusCode, 200)
    const response = await statusOf(code, email)
    assert.deepEqual(response.json<RegistrationStatus>(), { request_code: code, status: 'rejected' })
  })

  it('gives an unknown code and a wrong e-mail the very same 404', async () => {
    const { request_code: code, email } = await submitRegistration(t.app)
    const unknownCode = await statusOf('reg_AAAAAAAAAAAAAAAAAAAAAAAA', email)
    const wrongEmail = await statusOf(code, 'someone.else@example.com')
    // Longer than any code: as unknown as any other.
    const longCode = await statusOf(`reg_${'A'.repeat(97)}`, email)
    for (const response of [unknownCode, wrongEmail, longCode]) {
      assert.equal(response.statusCode, 404)
      assert.equal(response.body, '{"detail":"Registration request not found"}')
    }
    assert.equal(unknownCode.headers['content-type'], wrongEmail.headers['content-type'])
    assert.equal(unknownCode.headers['content-length'], wrongEmail.headers['content-length'])
  })

  it('does not reveal another applicant’s key to someone who knows only the code', async () => {
    const tenant = await createTenant(t.app)
    const response = await statusOf(tenant.requestCode, 'attacker@example.com')
    assert.equal(response.statusCode, 404)
    assert.ok(!response.body.includes(tenant.apiKey))
  })

  it('shows an approved request without its key on a server whose SECRET_KEY cannot read it', async () => {
    const tenant = await createTenant(t.app)
    // Another API process on the same database, started with another SECRET_KEY.
    const dataDir = mkdtempSync(path.join(tmpdir(), 'mls-other-key-'))
    const config = loadConfig({ DATA_DIR: dataDir, SECRET_KEY: 'another-secret-key-that-is-long-enough-9876', RATE_LIMIT_ENABLED: 'false' })
    const other = await buildApp({ config, database: t.database.handle, logger: false })
    try {
      const response = await other.inject({ url: `/tenants/register/${tenant.requestCode}`, query: { email: tenant.email } })
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(response.json<RegistrationStatus>(), { request_code: tenant.requestCode, status: 'approved', tenant_id: tenant.tenantId })
    } finally {
      await other.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  it('answers 422 when the email query parameter is missing', async () => {
    const { request_code: code } = await submitRegistration(t.app)
    const response = await statusOf(code)
    assert.equal(response.statusCode, 422)
    assert.deepEqual(response.json<ValidationErrorBody>().errors[0]?.loc, ['query', 'email'])
  })
})

describe('registration rate limits', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_REGISTRATION_PER_HOUR: '2',
      RATE_LIMIT_REGISTRATION_STATUS_PER_MINUTE: '3',
    })
  })
  after(() => t.close())

  it('limits registrations per address with a JSON 429, Retry-After and RateLimit headers', async () => {
    const send = () => t.app.inject({ method: 'POST', url: '/tenants/register', payload: registrationBody() })
    const first = await send()
    assert.equal(first.statusCode, 201)
    assert.equal(first.headers['ratelimit-limit'], '2')
    assert.equal((await send()).statusCode, 201)
    const limited = await send()
    assert.equal(limited.statusCode, 429)
    assert.ok(Number(limited.headers['retry-after']) > 0)
    assert.match(limited.json<ErrorBody>().detail, /^Too many requests; retry in .+\.$/)
    // Another address is counted apart.
    const elsewhere = await t.app.inject({
      method: 'POST',
      url: '/tenants/register',
      payload: registrationBody(),
      remoteAddress: '203.0.113.7',
    })
    assert.equal(elsewhere.statusCode, 201)
  })

  it('limits status lookups per address', async () => {
    const codes = [200, 200, 200, 429]
    for (const expected of codes) {
      const response = await t.app.inject({
        method: 'GET',
        url: '/tenants/register/reg_unknown?email=a@b.ru',
        remoteAddress: '198.51.100.9',
      })
      assert.equal(response.statusCode, expected === 200 ? 404 : 429)
    }
  })

  it('counts HEAD lookups with GET ones: a HEAD answers 200 or 404 as well, so it probes as well', async () => {
    const lookup = (method: 'GET' | 'HEAD') => t.app.inject({ method, url: '/tenants/register/reg_unknown?email=a@b.ru', remoteAddress: '198.51.100.10' })
    assert.deepEqual(
      [(await lookup('HEAD')).statusCode, (await lookup('GET')).statusCode, (await lookup('HEAD')).statusCode, (await lookup('GET')).statusCode],
      [404, 404, 404, 429],
    )
    const over = await lookup('HEAD')
    assert.equal(over.statusCode, 429)
    assert.ok(Number(over.headers['retry-after']) > 0)
  })
})

describe('rate limits shared through Redis', { skip: !process.env.REDIS_URL && 'needs REDIS_URL' }, () => {
  const apps: TestApp[] = []
  before(async () => {
    const env = { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_REGISTRATION_STATUS_PER_MINUTE: '2', REDIS_URL: process.env.REDIS_URL! }
    apps.push(await buildTestApp(env), await buildTestApp(env))
  })
  after(() => Promise.all(apps.map((t) => t.close())))

  it('counts one client’s requests across two API processes', async () => {
    // A fresh address per run: Redis keeps counts between runs.
    const remoteAddress = `198.18.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`
    const lookup = (t: TestApp) => t.app.inject({ method: 'GET', url: '/tenants/register/reg_unknown?email=a@b.ru', remoteAddress })
    assert.equal((await lookup(apps[0]!)).statusCode, 404)
    assert.equal((await lookup(apps[1]!)).statusCode, 404)
    assert.equal((await lookup(apps[0]!)).statusCode, 429)
  })

  it('counts from the first request a service just started answers', async () => {
    // Counts stay in Redis between runs: a prefix of its own keeps this run's apart.
    const fresh = await buildTestApp({
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_REGISTRATION_PER_HOUR: '2',
      REDIS_URL: process.env.REDIS_URL!,
      REDIS_KEY_PREFIX: `test-${randomUUID()}:`,
    })
    try {
      // Ready means Redis has answered: until then a request would go on uncounted.
      assert.equal(fresh.app.rateLimitRedis?.status, 'ready')
      const statuses = []
      for (let i = 0; i < 3; i++) {
        statuses.push(
          (await fresh.app.inject({ method: 'POST', url: '/tenants/register', payload: registrationBody(), remoteAddress: '198.51.100.77' })).statusCode,
        )
      }
      assert.deepEqual(statuses, [201, 201, 429])
    } finally {
      await fresh.close()
    }
  })
})
