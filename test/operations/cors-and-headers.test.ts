import assert from 'node:assert/strict'
import { connect, type AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { ADMIN_KEY, buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, propertyBody, submitProperty, type Tenant } from '../helpers/factories.js'
import { photo, upload } from '../helpers/photos.js'
import type { StoredImage } from '../helpers/responses.js'

const PORTAL = 'https://portal.example'
const AGENCY_APP = 'https://agency.example'
const EXPOSED = ['etag', 'location', 'retry-after', 'x-request-id', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']

/** A header's comma-separated values, lower-cased. */
const listOf = (response: LightMyRequestResponse, name: string): string[] =>
  String(response.headers[name] ?? '')
    .split(',')
    .map((value) => value.trim().toLowerCase())
    .filter((value) => value !== '')

const preflight = (t: TestApp, url: string, origin: string, method: string, headers = 'content-type') =>
  t.app.inject({
    method: 'OPTIONS',
    url,
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  })

/** The Content-Security-Policy as directive → sources. */
function policyOf(response: LightMyRequestResponse): Map<string, string[]> {
  const header = response.headers['content-security-policy']
  assert.equal(typeof header, 'string', 'a Content-Security-Policy is sent')
  return new Map(
    (header as string)
      .split(';')
      .map((part) => part.trim().split(/\s+/))
      .filter(([name]) => name)
      .map(([name, ...sources]) => [name!.toLowerCase(), sources]),
  )
}

function assertSecurityHeaders(response: LightMyRequestResponse, what: string, resourcePolicy: 'cross-origin' | 'same-origin'): void {
  assert.equal(response.headers['x-content-type-options'], 'nosniff', what)
  assert.equal(response.headers['x-frame-options'], 'DENY', what)
  assert.equal(response.headers['referrer-policy'], 'no-referrer', what)
  assert.equal(response.headers['cross-origin-resource-policy'], resourcePolicy, what)
  const policy = policyOf(response)
  assert.deepEqual(policy.get('default-src'), ["'none'"], what)
  assert.deepEqual(policy.get('frame-ancestors'), ["'none'"], what)
}

describe('cross-origin access with no CORS_ORIGINS', () => {
  let t: TestApp
  let agency: Tenant
  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app)
  })
  after(() => t.close())

  it('lets a page on any origin search the catalogue, preflight included', async () => {
    const allowed = await preflight(t, '/mls/properties?city_id=1', PORTAL, 'GET', 'if-none-match, x-request-id')
    assert.equal(allowed.statusCode, 204)
    assert.equal(allowed.headers['access-control-allow-origin'], '*')
    assert.equal(allowed.headers['access-control-allow-credentials'], undefined)
    assert.ok(listOf(allowed, 'access-control-allow-methods').includes('get'))
    for (const name of ['if-none-match', 'x-request-id']) assert.ok(listOf(allowed, 'access-control-allow-headers').includes(name), name)

    const search = await t.app.inject({ url: '/mls/properties', headers: { origin: PORTAL } })
    assert.equal(search.statusCode, 200)
    assert.equal(search.headers['access-control-allow-origin'], '*')
    for (const name of EXPOSED) assert.ok(listOf(search, 'access-control-expose-headers').includes(name), `exposes ${name}`)
    // The same answer for every origin, so shared caches keep one copy.
    assert.ok(!listOf(search, 'vary').includes('origin'))
  })

  it('lets any origin read the reference data, the documents and the health routes, and register', async () => {
    for (const url of [
      '/',
      '/healthz',
      '/readyz',
      '/openapi.json',
      '/cities',
      '/property-types',
      '/attributes',
      '/tenants/register/reg_unknown?email=a@b.ru',
    ]) {
      const response = await t.app.inject({ url, headers: { origin: PORTAL } })
      assert.equal(response.headers['access-control-allow-origin'], '*', url)
    }
    const registration = await preflight(t, '/tenants/register', PORTAL, 'POST', 'content-type')
    assert.equal(registration.statusCode, 204)
    assert.equal(registration.headers['access-control-allow-origin'], '*')
    assert.ok(listOf(registration, 'access-control-allow-methods').includes('post'))
    assert.ok(listOf(registration, 'access-control-allow-headers').includes('content-type'))
  })

  it('gives no other origin the agency and operator routes, before any key check', async () => {
    for (const [url, method] of [
      ['/properties', 'POST'],
      ['/properties/1/status', 'POST'],
      ['/tenants/me', 'GET'],
      ['/webhooks/1', 'DELETE'],
      ['/admin/registrations', 'GET'],
    ] as const) {
      const refused = await preflight(t, url, PORTAL, method, 'x-api-key, content-type')
      assert.equal(refused.statusCode, 204, `${method} ${url}: the preflight is answered, not sent to the key check`)
      assert.equal(refused.headers['access-control-allow-origin'], undefined, `${method} ${url}`)
    }
    const read = await t.app.inject({ url: '/tenants/me', headers: { ...agency.headers, origin: PORTAL } })
    assert.equal(read.statusCode, 200)
    assert.equal(read.headers['access-control-allow-origin'], undefined)
  })
})

describe('cross-origin access with CORS_ORIGINS', () => {
  let t: TestApp
  let agency: Tenant
  before(async () => {
    t = await buildTestApp({ CORS_ORIGINS: `${AGENCY_APP}, http://localhost:5173`, PUBLIC_BASE_URL: 'https://mls.example' })
    agency = await createTenant(t.app)
  })
  after(() => t.close())

  it('lets a listed origin call the agency routes, and no other', async () => {
    const allowed = await preflight(t, '/properties', AGENCY_APP, 'POST', 'x-api-key, content-type, idempotency-key')
    assert.equal(allowed.statusCode, 204)
    assert.equal(allowed.headers['access-control-allow-origin'], AGENCY_APP)
    assert.equal(allowed.headers['access-control-allow-credentials'], undefined)
    assert.ok(listOf(allowed, 'vary').includes('origin'))
    assert.ok(listOf(allowed, 'access-control-allow-methods').includes('post'))
    for (const name of ['x-api-key', 'content-type', 'idempotency-key', 'x-request-id']) {
      assert.ok(listOf(allowed, 'access-control-allow-headers').includes(name), name)
    }

    const created = await t.app.inject({ method: 'POST', url: '/properties', headers: { ...agency.headers, origin: AGENCY_APP }, payload: propertyBody() })
    assert.equal(created.statusCode, 201, created.body)
    assert.equal(created.headers['access-control-allow-origin'], AGENCY_APP)
    assert.ok(listOf(created, 'vary').includes('origin'))
    for (const name of EXPOSED) assert.ok(listOf(created, 'access-control-expose-headers').includes(name), `exposes ${name}`)

    const local = await preflight(t, '/properties/1', 'http://localhost:5173', 'PATCH', 'x-api-key')
    assert.equal(local.headers['access-control-allow-origin'], 'http://localhost:5173')
    const admin = await preflight(t, '/admin/registrations', AGENCY_APP, 'GET', 'x-admin-key')
    assert.equal(admin.headers['access-control-allow-origin'], AGENCY_APP)

    for (const origin of [PORTAL, 'https://agency.example.evil.example', 'http://agency.example']) {
      assert.equal((await preflight(t, '/properties', origin, 'POST')).headers['access-control-allow-origin'], undefined, origin)
    }
  })

  it('still answers every origin on the public routes', async () => {
    const search = await t.app.inject({ url: '/mls/properties', headers: { origin: AGENCY_APP } })
    assert.equal(search.headers['access-control-allow-origin'], '*')
  })

  it('sends Strict-Transport-Security when PUBLIC_BASE_URL is https', async () => {
    const response = await t.app.inject('/healthz')
    assert.equal(response.headers['strict-transport-security'], 'max-age=31536000')
  })
})

describe('security headers', () => {
  let t: TestApp
  let agency: Tenant
  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app)
  })
  after(() => t.close())

  it('come with every JSON answer, errors included', async () => {
    const answers: [string, LightMyRequestResponse, 'cross-origin' | 'same-origin'][] = [
      ['a catalogue search', await t.app.inject('/mls/properties'), 'cross-origin'],
      ['a 404 of an unknown route', await t.app.inject('/no/such/route'), 'cross-origin'],
      ['a 422', await t.app.inject('/mls/properties?limit=0'), 'cross-origin'],
      ['a 401', await t.app.inject('/properties'), 'same-origin'],
      ['an agency read', await t.app.inject({ url: '/properties', headers: agency.headers }), 'same-origin'],
      ['an operator read', await t.app.inject({ url: '/admin/registrations', headers: { 'x-admin-key': ADMIN_KEY } }), 'same-origin'],
      ['a preflight', await preflight(t, '/mls/properties', PORTAL, 'GET'), 'cross-origin'],
    ]
    for (const [what, response, resourcePolicy] of answers) assertSecurityHeaders(response, what, resourcePolicy)
    // Plain HTTP (PUBLIC_BASE_URL http://mls.test): no HSTS, which browsers would ignore or misapply.
    assert.equal(answers[0]![1].headers['strict-transport-security'], undefined)
  })

  it('keep an agency’s and an operator’s answers out of every cache (Cache-Control: no-store), the owner’s phone among them', async () => {
    const property = await submitProperty(t.app, agency)
    const answers: [string, LightMyRequestResponse][] = [
      ['a listing with its owner', await t.app.inject({ url: `/properties/${property.id}`, headers: agency.headers })],
      ['the agency’s listings', await t.app.inject({ url: '/properties', headers: agency.headers })],
      ['the agency', await t.app.inject({ url: '/tenants/me', headers: agency.headers })],
      ['a submission', await t.app.inject({ method: 'POST', url: '/properties', headers: agency.headers, payload: propertyBody() })],
      ['an operator’s queue', await t.app.inject({ url: '/admin/properties', headers: { 'x-admin-key': ADMIN_KEY } })],
    ]
    assert.match(answers[0]![1].body, /\+7 912 345-67-89/, 'the owner’s phone')
    for (const [what, response] of answers) {
      assert.ok(response.statusCode < 300, `${what}: ${response.statusCode}`)
      assert.equal(response.headers['cache-control'], 'no-store', what)
    }
    // The catalogue's own, public, stay as they are.
    assert.equal((await t.app.inject('/mls/properties')).headers['cache-control'], 'public, max-age=30')
  })

  it('let other sites show the photos', async () => {
    const property = await submitProperty(t.app, agency)
    const uploaded = await upload(t.app, agency, { file: await photo('jpeg', 64, 48), fields: { property_id: String(property.id) } })
    assert.equal(uploaded.statusCode, 201, uploaded.body)
    const served = await t.app.inject({ url: new URL(uploaded.json<StoredImage>().url).pathname, headers: { origin: PORTAL } })
    assert.equal(served.statusCode, 200)
    assert.equal(served.headers['content-type'], 'image/jpeg')
    assert.equal(served.headers['cross-origin-resource-policy'], 'cross-origin')
    assert.equal(served.headers['access-control-allow-origin'], '*')
    assert.equal(served.headers['x-content-type-options'], 'nosniff')
  })

  it('let /docs load its own scripts and styles and call this origin only', async () => {
    const page = await t.app.inject('/docs')
    assert.equal(page.statusCode, 200)
    assert.match(page.headers['content-type'] as string, /^text\/html/)
    const policy = policyOf(page)
    assert.deepEqual(policy.get('default-src'), ["'none'"])
    assert.deepEqual(policy.get('frame-ancestors'), ["'none'"])
    assert.deepEqual(policy.get('connect-src'), ["'self'"])
    assert.equal(page.headers['x-frame-options'], 'DENY')

    // Every script is a file of this origin (no inline code, which 'self' would block).
    const scripts = [...page.body.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)]
    assert.ok(scripts.length >= 3)
    const styles = [...page.body.matchAll(/<link[^>]*rel="stylesheet"[^>]*href="([^"]+)"/g)].map((match) => match[1]!)
    assert.ok(styles.length >= 1)
    assert.ok(!/<style|\sstyle=|\son\w+=/.test(page.body), 'no inline style or event handler')
    const assets: [string, string][] = [
      ...scripts.map(([, attributes, body]): [string, string] => {
        assert.equal(body!.trim(), '', 'a script has no inline code')
        return ['script-src', /src="([^"]+)"/.exec(attributes!)![1]!]
      }),
      ...styles.map((href): [string, string] => ['style-src', href]),
    ]
    for (const [directive, reference] of assets) {
      const url = new URL(reference, 'http://mls.test/docs')
      assert.equal(url.origin, 'http://mls.test', `${reference} is on this origin`)
      assert.ok((policy.get(directive) ?? policy.get('default-src'))!.includes("'self'"), `${directive} admits ${reference}`)
      const asset = await t.app.inject(url.pathname)
      assert.equal(asset.statusCode, 200, reference)
      // swagger-ui's CSS draws its icons with data: URLs: images from data: must be allowed.
      if (directive === 'style-src') {
        for (const [, target] of asset.body.matchAll(/url\(\s*["']?([^"')]+)/g)) {
          assert.ok(
            target!.startsWith('data:') ? policy.get('img-src')!.includes('data:') : !/^\w+:/.test(target!),
            `${reference}: url(${target!.slice(0, 30)})`,
          )
        }
      }
    }

    // "Try it out" calls the origin the page came from, whatever name it was opened by.
    const document = (await t.app.inject('/docs/json')).json<{ servers: { url: string }[] }>()
    assert.deepEqual(
      document.servers.map((server) => server.url),
      ['/'],
    )
  })
})

describe('security headers on answers written before Fastify sees a request', () => {
  let t: TestApp
  let port: number
  before(async () => {
    t = await buildTestApp()
    await t.app.listen({ host: '127.0.0.1', port: 0 })
    port = (t.app.server.address() as AddressInfo).port
  })
  after(() => t.close())

  /** Sends `request` as it is and reads the answer until the server closes the connection. */
  const rawExchange = (request: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(request))
      let answer = ''
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')))
      socket.on('close', () => resolve(answer))
      socket.on('error', reject)
    })

  const headersOf = (answer: string) =>
    new Map(
      answer
        .split('\r\n\r\n')[0]!
        .split('\r\n')
        .slice(1)
        .map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()] as const),
    )

  // Every answer carries them (docs/api.md#calling-from-a-browser), these too: a browser with
  // oversized cookies gets the 431.
  for (const [what, request, status] of [
    ['headers over 16 KiB', `GET /tenants/me HTTP/1.1\r\nHost: mls.test\r\nCookie: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
    ['a request that is not valid HTTP', 'GET /tenants/me HTTP/1.1\r\nHost: mls.test\r\nNot a header\r\n\r\n', 400],
  ] as const) {
    it(`sends them with the ${status} to ${what}`, async () => {
      const answer = await rawExchange(request)
      assert.match(answer, new RegExp(`^HTTP/1\\.1 ${status} `), answer)
      const headers = headersOf(answer)
      assert.equal(headers.get('x-content-type-options'), 'nosniff', answer)
      assert.equal(headers.get('x-frame-options'), 'DENY', answer)
      assert.match(headers.get('content-security-policy') ?? '', /default-src 'none'; ?frame-ancestors 'none'/, answer)
      assert.equal(headers.get('referrer-policy'), 'no-referrer', answer)
      // Its route is not known: the stricter resource policy, and a request id of its own.
      assert.equal(headers.get('cross-origin-resource-policy'), 'same-origin', answer)
      assert.match(headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, answer)
    })
  }
})
