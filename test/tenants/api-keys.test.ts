import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import { eq, sql } from 'drizzle-orm'
import { apiKeys } from '../../src/db/schema.js'
import { digestSecret } from '../../src/lib/secrets.js'
import { MAX_ACTIVE_KEYS, type ApiKey, type CreatedApiKey, type RegistrationStatus } from '../../src/modules/tenants/tenants.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { adminHeaders, createTenant, type Tenant } from '../helpers/factories.js'
import type { ApiKeyPage, ErrorBody, TenantMe, ValidationErrorBody } from '../helpers/responses.js'
import { waitFor } from '../helpers/webhooks.js'

const INVALID_KEY = '{"detail":"Invalid or missing API key"}'
const KEY_FIELDS = ['created_at', 'expires_at', 'id', 'last_used_at', 'name', 'prefix', 'revoked_at']
const DAY_MS = 24 * 60 * 60 * 1000

describe('an agency’s API keys', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  const headersOf = (key: string) => ({ 'x-api-key': key })
  const me = (key: string) => t.app.inject({ method: 'GET', url: '/tenants/me', headers: headersOf(key) })
  const list = (tenant: Tenant | string, query = '') =>
    t.app.inject({ method: 'GET', url: `/tenants/me/api-keys${query}`, headers: typeof tenant === 'string' ? headersOf(tenant) : tenant.headers })
  const keysOf = async (tenant: Tenant | string): Promise<ApiKey[]> => {
    const response = await list(tenant)
    assert.equal(response.statusCode, 200, response.body)
    return response.json<ApiKeyPage>().items
  }
  const create = (tenant: Tenant | string, payload?: object) =>
    t.app.inject({
      method: 'POST',
      url: '/tenants/me/api-keys',
      headers: typeof tenant === 'string' ? headersOf(tenant) : tenant.headers,
      ...(payload ? { payload } : {}),
    })
  const createKey = async (tenant: Tenant | string, payload: object = {}): Promise<CreatedApiKey> => {
    const response = await create(tenant, payload)
    assert.equal(response.statusCode, 201, response.body)
    return response.json<CreatedApiKey>()
  }
  const revoke = (tenant: Tenant | string, id: number | string) =>
    t.app.inject({ method: 'DELETE', url: `/tenants/me/api-keys/${id}`, headers: typeof tenant === 'string' ? headersOf(tenant) : tenant.headers })
  const lookup = async (tenant: Tenant) => {
    const response = await t.app.inject({ url: `/tenants/register/${tenant.requestCode}?email=${encodeURIComponent(tenant.email)}` })
    assert.equal(response.statusCode, 200, response.body)
    return response.json<RegistrationStatus>()
  }

  it('lists the key issued on approval: its prefix and times, never the key', async () => {
    const agency = await createTenant(t.app)
    const response = await list(agency)
    assert.equal(response.statusCode, 200)
    const page = response.json<ApiKeyPage>()
    assert.equal(page.total, 1)
    assert.equal(page.limit, 50)
    assert.equal(page.offset, 0)
    const [key] = page.items
    assert.deepEqual(Object.keys(key!).sort(), KEY_FIELDS)
    assert.equal(key!.name, null)
    assert.equal(key!.prefix, agency.apiKey.slice(0, 13))
    assert.match(key!.prefix, /^mls_live_.{4}$/)
    assert.match(key!.created_at, /\+00:00$/)
    assert.equal(key!.expires_at, null)
    assert.equal(key!.revoked_at, null)
    assert.ok(!response.body.includes(agency.apiKey.slice(13)), 'the key itself is never listed')
  })

  it('creates a key shown once that works at once beside the old one, so the old one can be revoked (rotation)', async () => {
    const agency = await createTenant(t.app)
    const response = await create(agency, { name: 'Выгрузка в CRM', expires_in_days: 30 })
    assert.equal(response.statusCode, 201, response.body)
    assert.equal(response.headers.location, '/tenants/me/api-keys')
    assert.equal(response.headers['cache-control'], 'no-store')
    const created = response.json<CreatedApiKey>()
    assert.deepEqual(Object.keys(created).sort(), [...KEY_FIELDS, 'key'].sort())
    assert.match(created.key, /^mls_live_[A-Za-z0-9_-]{43}$/)
    assert.equal(created.prefix, created.key.slice(0, 13))
    assert.equal(created.name, 'Выгрузка в CRM')
    assert.equal(created.last_used_at, null)
    assert.equal(created.revoked_at, null)
    const expiresIn = Date.parse(created.expires_at!) - Date.parse(created.created_at)
    assert.ok(Math.abs(expiresIn - 30 * DAY_MS) < 1000, `expires 30 days after creation, not ${expiresIn} ms`)

    // Only the digest is stored.
    const [row] = await t.db.select().from(apiKeys).where(eq(apiKeys.id, created.id))
    assert.equal(row?.digest, digestSecret(created.key))
    assert.ok(!Object.values(row).includes(created.key))

    // Both keys work; the list shows both, newest first, without the key.
    assert.equal((await me(created.key)).json<TenantMe>().tenant_id, agency.tenantId)
    assert.equal((await me(agency.apiKey)).statusCode, 200)
    const listed = await keysOf(created.key)
    assert.deepEqual(
      listed.map((key) => key.id),
      [created.id, listed[1]!.id],
    )
    const { key: _shownOnce, ...withoutKey } = created
    assert.deepEqual({ ...listed[0], last_used_at: null }, withoutKey)

    // The old key is revoked with the new one, and refused from the next request on.
    const old = listed[1]!
    const revoked = await revoke(created.key, old.id)
    assert.equal(revoked.statusCode, 204)
    assert.equal(revoked.body, '')
    const refused = await me(agency.apiKey)
    assert.equal(refused.statusCode, 401)
    assert.equal(refused.body, INVALID_KEY)
    assert.equal((await me(created.key)).statusCode, 200)
    const after = await keysOf(created.key)
    assert.equal(after.length, 2, 'revoked keys stay listed')
    assert.match(after.find((key) => key.id === old.id)!.revoked_at ?? '', /\+00:00$/)
  })

  it('refuses a name that is not one line of text, or that is nothing but invisible characters, by the agency and by an operator', async () => {
    const agency = await createTenant(t.app)
    // U+E0020 and U+E007F, tag characters: as invisible as a zero-width space, but outside the BMP.
    for (const name of ['CRM\nexport', 'CRM\r\nexport', 'CRM\texport', 'CRM\u001bexport', 'CRM\u007fexport', '\u{E0020}\u{E0020}\u{E007F}']) {
      for (const response of [
        await create(agency, { name }),
        await t.app.inject({ method: 'POST', url: `/admin/tenants/${agency.tenantId}/api-keys`, headers: adminHeaders, payload: { name } }),
      ]) {
        assert.equal(response.statusCode, 422, `${JSON.stringify(name)}: ${response.body}`)
        assert.deepEqual(
          response.json<ValidationErrorBody>().errors.map((error) => error.loc),
          [['body', 'name']],
        )
      }
    }
    assert.equal((await keysOf(agency)).length, 1, 'no key was created')
  })

  it('creates an unnamed key that does not expire from a bare POST', async () => {
    const agency = await createTenant(t.app)
    const created = await createKey(agency)
    assert.equal(created.name, null)
    assert.equal(created.expires_at, null)
    assert.equal((await me(created.key)).statusCode, 200)
  })

  it('records when a key was last used', async () => {
    const agency = await createTenant(t.app)
    const created = await createKey(agency, { name: 'Сайт' })
    const lastUsed = async () => (await keysOf(agency)).find((key) => key.id === created.id)!.last_used_at
    assert.equal(await lastUsed(), null)
    const startedAt = Date.now()
    assert.equal((await me(created.key)).statusCode, 200)
    // Written beside the request, not in its path: it shows shortly after.
    await waitFor(async () => (await lastUsed()) !== null, 10_000, 'last_used_at to be written')
    const used = Date.parse((await lastUsed())!)
    assert.ok(used >= startedAt - 1000 && used <= Date.now() + 1000, `last_used_at ${new Date(used).toISOString()} is the time of the use`)
  })

  it('shows the approval key in the registration lookup until it is revoked', async () => {
    const agency = await createTenant(t.app)
    const before = await lookup(agency)
    assert.ok(before.status === 'approved')
    assert.equal(before.api_key, agency.apiKey)

    const created = await createKey(agency)
    const approvalKey = (await keysOf(agency)).find((key) => key.id !== created.id)!
    assert.equal((await revoke(agency, approvalKey.id)).statusCode, 204)

    const after = await lookup(agency)
    assert.deepEqual(after, { request_code: agency.requestCode, status: 'approved', tenant_id: agency.tenantId })
  })

  it('refuses an expired key like an unknown one, and does not count it as active', async () => {
    const agency = await createTenant(t.app)
    const expiring = await createKey(agency, { expires_in_days: 1 })
    await t.db
      .update(apiKeys)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(eq(apiKeys.id, expiring.id))
    const refused = await me(expiring.key)
    assert.equal(refused.statusCode, 401)
    assert.equal(refused.body, INVALID_KEY)
    // Still listed, with its time; the approval key is now the only active one.
    const listed = (await keysOf(agency)).find((key) => key.id === expiring.id)!
    assert.ok(Date.parse(listed.expires_at!) < Date.now())
    assert.equal(listed.revoked_at, null)
    const approvalKey = (await keysOf(agency)).find((key) => key.id !== expiring.id)!
    const last = await revoke(agency, approvalKey.id)
    assert.equal(last.statusCode, 409, last.body)
    // An expired key may be revoked: that takes nothing from the agency.
    assert.equal((await revoke(agency, expiring.id)).statusCode, 204)
  })

  it('refuses a key it has just used once it expires, not after the cache’s 10 s', async () => {
    const agency = await createTenant(t.app)
    const expiring = await createKey(agency, { expires_in_days: 1 })
    const [row] = await t.db
      .update(apiKeys)
      .set({ expiresAt: sql`now() + interval '3 seconds'` })
      .where(eq(apiKeys.id, expiring.id))
      .returning({ expiresAt: apiKeys.expiresAt })
    assert.equal((await me(expiring.key)).statusCode, 200, 'works until it expires')
    const expiresAt = row!.expiresAt!.getTime()
    // Kept by the cache for 10 s it would answer 200 until 7 s after expiry at the earliest.
    await waitFor(async () => (await me(expiring.key)).statusCode === 401, expiresAt + 4000 - Date.now(), 'the key to be refused once expired')
  })

  it('revokes: the key is refused at once, a second revocation changes nothing', async () => {
    const agency = await createTenant(t.app)
    const spare = await createKey(agency)
    assert.equal((await me(spare.key)).statusCode, 200)
    assert.equal((await revoke(agency, spare.id)).statusCode, 204)
    assert.equal((await me(spare.key)).body, INVALID_KEY)
    const revokedAt = (await keysOf(agency)).find((key) => key.id === spare.id)!.revoked_at
    assert.ok(revokedAt)
    assert.equal((await revoke(agency, spare.id)).statusCode, 204)
    assert.equal((await keysOf(agency)).find((key) => key.id === spare.id)!.revoked_at, revokedAt)
  })

  it('refuses to mint a key for a request let in with a key revoked before its body arrived', async () => {
    const agency = await createTenant(t.app)
    const leaked = await createKey(agency, { name: 'leaked' })
    // Let in on its headers, its body still coming: its key's use is recorded.
    const body = new PassThrough()
    const inFlight = t.app.inject({
      method: 'POST',
      url: '/tenants/me/api-keys',
      headers: { ...headersOf(leaked.key), 'content-type': 'application/json' },
      payload: body,
    })
    await waitFor(
      async () => (await t.db.select({ lastUsedAt: apiKeys.lastUsedAt }).from(apiKeys).where(eq(apiKeys.id, leaked.id)))[0]?.lastUsedAt != null,
      30_000,
      'the leaked key to be let in',
    )
    const revoked = await t.app.inject({ method: 'DELETE', url: `/tenants/me/api-keys/${leaked.id}`, headers: agency.headers })
    assert.equal(revoked.statusCode, 204, revoked.body)
    body.end(JSON.stringify({ name: 'persistence' }))
    const response = await inFlight
    assert.equal(response.statusCode, 401, response.body)
    assert.equal(response.body, INVALID_KEY)
    assert.equal((await keysOf(agency)).length, 2, 'no key minted: the approval key and the leaked one')
  })

  it('never revokes the agency’s last active key', async () => {
    const agency = await createTenant(t.app)
    const [only] = await keysOf(agency)
    const response = await revoke(agency, only!.id)
    assert.equal(response.statusCode, 409)
    assert.deepEqual(response.json<ErrorBody>(), { detail: 'This is the agency’s last active API key; create another one before revoking it.' })
    assert.equal((await me(agency.apiKey)).statusCode, 200)
  })

  it(`allows at most ${MAX_ACTIVE_KEYS} active keys`, async () => {
    const agency = await createTenant(t.app)
    const created: CreatedApiKey[] = []
    for (let index = 1; index < MAX_ACTIVE_KEYS; index++) created.push(await createKey(agency, { name: `Ключ ${index}` }))
    const refused = await create(agency, { name: 'Лишний' })
    assert.equal(refused.statusCode, 409)
    assert.deepEqual(refused.json<ErrorBody>(), {
      detail: `An agency may have at most ${MAX_ACTIVE_KEYS} active API keys; revoke one before creating another.`,
    })
    assert.equal((await list(agency)).json<ApiKeyPage>().total, MAX_ACTIVE_KEYS)
    assert.equal((await revoke(agency, created[0]!.id)).statusCode, 204)
    await createKey(agency, { name: 'На место отозванного' })
  })

  it('pages the list', async () => {
    const agency = await createTenant(t.app)
    const created = await createKey(agency)
    const page = (await list(agency, '?limit=1&offset=1')).json<ApiKeyPage>()
    assert.equal(page.total, 2)
    assert.equal(page.items.length, 1)
    assert.notEqual(page.items[0]!.id, created.id)
  })

  const invalidBodies: [string, object, string[]][] = [
    ['a name over 100 characters', { name: 'к'.repeat(101) }, ['body', 'name']],
    ['an empty name', { name: '' }, ['body', 'name']],
    ['a blank name', { name: '   ' }, ['body', 'name']],
    ['a name of invisible characters', { name: '\u200b\ufeff' }, ['body', 'name']],
    ['zero days', { expires_in_days: 0 }, ['body', 'expires_in_days']],
    ['more than 3650 days', { expires_in_days: 3651 }, ['body', 'expires_in_days']],
    ['a fraction of a day', { expires_in_days: 1.5 }, ['body', 'expires_in_days']],
    ['days as a string', { expires_in_days: '30' }, ['body', 'expires_in_days']],
    ['an unknown field', { tenant_id: 1 }, ['body', 'tenant_id']],
  ]
  for (const [what, payload, loc] of invalidBodies) {
    it(`answers 422 to ${what}, creating nothing`, async () => {
      const agency = await createTenant(t.app)
      const response = await create(agency, payload)
      assert.equal(response.statusCode, 422, response.body)
      const body = response.json<ValidationErrorBody>()
      assert.ok(body.detail.endsWith('.'))
      assert.ok(
        body.errors.some((error) => JSON.stringify(error.loc) === JSON.stringify(loc)),
        JSON.stringify(body.errors),
      )
      assert.equal((await list(agency)).json<ApiKeyPage>().total, 1)
    })
  }

  it('answers 422 to a key id or a page that is not valid, and 404 to an id no key can have', async () => {
    const agency = await createTenant(t.app)
    for (const response of [await revoke(agency, 'first'), await list(agency, '?limit=0'), await list(agency, '?offset=-1')]) {
      assert.equal(response.statusCode, 422, response.body)
      assert.ok(response.json<ValidationErrorBody>().errors.length > 0)
    }
    const impossible = await revoke(agency, 0)
    assert.deepEqual([impossible.statusCode, impossible.json<ErrorBody>()], [404, { detail: 'API key not found' }])
  })

  const badKeys: [string, Record<string, string>][] = [
    ['no key', {}],
    ['an unknown key', { 'x-api-key': 'mls_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }],
  ]
  for (const [what, headers] of badKeys) {
    it(`answers 401 to ${what} on every key route, changing nothing`, async () => {
      const agency = await createTenant(t.app)
      const [only] = await keysOf(agency)
      const responses = [
        await t.app.inject({ method: 'GET', url: '/tenants/me/api-keys', headers }),
        await t.app.inject({ method: 'POST', url: '/tenants/me/api-keys', headers, payload: { name: 'Чужой' } }),
        await t.app.inject({ method: 'DELETE', url: `/tenants/me/api-keys/${only!.id}`, headers }),
      ]
      for (const response of responses) {
        assert.equal(response.statusCode, 401)
        assert.equal(response.body, INVALID_KEY)
      }
      // The same one key, unrevoked (its last_used_at moves with the lists read here).
      assert.deepEqual(
        (await keysOf(agency)).map((key) => [key.id, key.revoked_at]),
        [[only!.id, null]],
      )
    })
  }

  it('answers 404 for another agency’s key, as for a missing one, and leaves it working', async () => {
    const owner = await createTenant(t.app)
    const other = await createTenant(t.app)
    const ownersSpare = await createKey(owner)
    await createKey(other)
    const foreign = await revoke(other, ownersSpare.id)
    const missing = await revoke(other, 2_000_000_000)
    for (const response of [foreign, missing]) {
      assert.equal(response.statusCode, 404)
      assert.deepEqual(response.json<ErrorBody>(), { detail: 'API key not found' })
    }
    assert.equal((await me(ownersSpare.key)).statusCode, 200)
    assert.ok(!(await keysOf(other)).some((key) => key.id === ownersSpare.id), 'an agency lists only its own keys')
  })
})

describe('operators and an agency’s API keys', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  const me = (key: string) => t.app.inject({ method: 'GET', url: '/tenants/me', headers: { 'x-api-key': key } })
  const keysPath = (tenantId: number | string) => `/admin/tenants/${tenantId}/api-keys`
  const adminRevoke = (tenantId: number | string, id: number | string, headers: Record<string, string> = adminHeaders) =>
    t.app.inject({ method: 'POST', url: `${keysPath(tenantId)}/${id}/revoke`, headers })
  const adminList = async (tenantId: number) => {
    const response = await t.app.inject({ url: keysPath(tenantId), headers: adminHeaders })
    assert.equal(response.statusCode, 200, response.body)
    return response.json<ApiKeyPage>()
  }

  it('revokes an agency’s last key, then hands it a new one', async () => {
    const agency = await createTenant(t.app)
    const [only] = (await adminList(agency.tenantId)).items
    assert.equal((await me(agency.apiKey)).statusCode, 200)

    const revoked = await adminRevoke(agency.tenantId, only!.id)
    assert.equal(revoked.statusCode, 200, revoked.body)
    const key = revoked.json<ApiKey>()
    assert.equal(key.id, only!.id)
    assert.match(key.revoked_at ?? '', /\+00:00$/)
    assert.equal((await me(agency.apiKey)).body, INVALID_KEY)
    // Again: the same answer, the first revocation's time.
    assert.deepEqual((await adminRevoke(agency.tenantId, only!.id)).json<ApiKey>(), key)

    const created = await t.app.inject({ method: 'POST', url: keysPath(agency.tenantId), headers: adminHeaders, payload: { name: 'Новый ключ после утечки' } })
    assert.equal(created.statusCode, 201, created.body)
    assert.equal(created.headers.location, keysPath(agency.tenantId))
    assert.equal(created.headers['cache-control'], 'no-store')
    const fresh = created.json<CreatedApiKey>()
    assert.equal((await me(fresh.key)).json<TenantMe>().tenant_id, agency.tenantId)
    assert.deepEqual(
      (await adminList(agency.tenantId)).items.map((item) => item.id),
      [fresh.id, only!.id],
    )
  })

  it('answers 404 for an unknown agency, and for a key through another agency', async () => {
    const owner = await createTenant(t.app)
    const other = await createTenant(t.app)
    const [ownersKey] = (await adminList(owner.tenantId)).items
    const responses = [
      await adminRevoke(other.tenantId, ownersKey!.id),
      await adminRevoke(2_000_000_000, ownersKey!.id),
      await t.app.inject({ url: keysPath(2_000_000_000), headers: adminHeaders }),
      await t.app.inject({ method: 'POST', url: keysPath(2_000_000_000), headers: adminHeaders, payload: {} }),
    ]
    assert.deepEqual(
      responses.map((response) => [response.statusCode, response.json<ErrorBody>().detail]),
      [
        [404, 'API key not found'],
        [404, 'Tenant not found'],
        [404, 'Tenant not found'],
        [404, 'Tenant not found'],
      ],
    )
    assert.equal((await me(owner.apiKey)).statusCode, 200)
  })

  it('answers 422 to ids and bodies that are not valid', async () => {
    const agency = await createTenant(t.app)
    const responses = [
      await adminRevoke('first', 1),
      await adminRevoke(agency.tenantId, 'first'),
      await t.app.inject({ url: `${keysPath(agency.tenantId)}?limit=101`, headers: adminHeaders }),
      await t.app.inject({ method: 'POST', url: keysPath(agency.tenantId), headers: adminHeaders, payload: { expires_in_days: 0 } }),
    ]
    for (const response of responses) assert.equal(response.statusCode, 422, response.body)
  })

  for (const [what, headers] of [
    ['no admin key', {}],
    ['a wrong admin key', { 'x-admin-key': 'wrong-key-wrong-key-wrong' }],
  ] as const) {
    it(`answers 401 to ${what}, changing nothing`, async () => {
      const agency = await createTenant(t.app)
      const [only] = (await adminList(agency.tenantId)).items
      const responses = [
        await t.app.inject({ url: keysPath(agency.tenantId), headers }),
        await t.app.inject({ method: 'POST', url: keysPath(agency.tenantId), headers, payload: {} }),
        await adminRevoke(agency.tenantId, only!.id, headers),
      ]
      for (const response of responses) {
        assert.equal(response.statusCode, 401)
        assert.deepEqual(response.json<ErrorBody>(), { detail: 'Invalid or missing admin key' })
      }
      assert.deepEqual(
        (await adminList(agency.tenantId)).items.map((key) => [key.id, key.revoked_at]),
        [[only!.id, null]],
      )
      assert.equal((await me(agency.apiKey)).statusCode, 200)
    })
  }
})
