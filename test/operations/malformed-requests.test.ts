import assert from 'node:assert/strict'
import { connect, type AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { gzipSync } from 'node:zlib'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import { adminHeaders, createTenant, propertyBody, registrationBody, submitProperty, type Tenant } from '../helpers/factories.js'
import type { ErrorBody, ValidationErrorBody } from '../helpers/responses.js'

/** Requests a careless or hostile client sends: each gets a `{"detail"}` answer, never a 500. */
describe('malformed requests', () => {
  let t: TestApp
  let agency: Tenant
  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app)
  })
  after(() => t.close())

  const propertyCount = async () => (await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from properties`))[0]!.n

  it('refuses the NUL character in any text with a 422 naming the field, and stores nothing', async () => {
    const before = await propertyCount()
    const cases: [Record<string, unknown>, (string | number)[]][] = [
      [propertyBody({ description: 'a\u0000b' }), ['body', 'description']],
      [propertyBody({ owner: { name: 'Иван\u0000', phone: '+79123456789' } }), ['body', 'owner', 'name']],
      [propertyBody({ location: { city_id: 1, address: 'ул.\u0000' } }), ['body', 'location', 'address']],
      [propertyBody({ attributes: { area: '54', 'rooms\u0000': '2' } }), ['body', 'attributes', 'rooms\u0000']],
    ]
    for (const [body, loc] of cases) {
      const response = await t.app.inject({ method: 'POST', url: '/properties', headers: agency.headers, payload: body })
      assert.equal(response.statusCode, 422, response.body)
      const answer = response.json<ValidationErrorBody>()
      assert.deepEqual(answer.errors[0]!.loc, loc)
      assert.match(answer.detail, /NUL character/)
    }
    assert.equal(await propertyCount(), before)

    const property = await submitProperty(t.app, agency)
    const patched = await t.app.inject({ method: 'PATCH', url: `/properties/${property.id}`, headers: agency.headers, payload: { description: 'x\u0000' } })
    assert.equal(patched.statusCode, 422, patched.body)
    const stored = await t.app.inject({ url: `/properties/${property.id}`, headers: agency.headers })
    assert.equal(stored.json<Property>().description, propertyBody().description)
  })

  it('refuses the NUL character on public routes, in bodies, paths and query strings', async () => {
    const register = await t.app.inject({ method: 'POST', url: '/tenants/register', payload: registrationBody({ company_name: 'ООО\u0000' }) })
    assert.equal(register.statusCode, 422, register.body)
    const status = await t.app.inject('/tenants/register/reg_%00?email=a%00@b.c')
    assert.equal(status.statusCode, 422, status.body)
    assert.deepEqual(
      status.json<ValidationErrorBody>().errors.map((error) => error.loc),
      [
        ['path', 'request_code'],
        ['query', 'email'],
      ],
    )
    // A query string may name a parameter `constructor`: the check must not take the query
    // for something other than parsed text.
    const named = await t.app.inject('/tenants/register/reg_x?constructor=1&email=a%00@b.c')
    assert.equal(named.statusCode, 422, named.body)
  })

  it('keeps an error within the lengths the document declares, whatever the request wrote (a name of 5,000 characters)', async () => {
    const name = 'a'.repeat(5000)
    const answers = [
      await t.app.inject({ method: 'POST', url: '/properties', headers: agency.headers, payload: { ...propertyBody(), attributes: { [name]: '1' } } }),
      await t.app.inject({ method: 'POST', url: '/properties', headers: agency.headers, payload: { ...propertyBody(), [name]: 1 } }),
      await t.app.inject({ url: `/${name}` }),
    ]
    assert.deepEqual(
      answers.map((answer) => answer.statusCode),
      [422, 422, 404],
    )
    for (const answer of answers) {
      const body = answer.json<Partial<ValidationErrorBody>>()
      assert.ok(body.detail!.length <= 2000, `detail of ${body.detail!.length} characters`)
      for (const error of body.errors ?? []) {
        assert.ok(error.msg.length <= 2000, `msg of ${error.msg.length} characters`)
        for (const part of error.loc) assert.ok(typeof part !== 'string' || part.length <= 1000, `loc part of ${String(part).length} characters`)
        assert.ok(String(error.loc.at(-1)).startsWith('aaaa') && String(error.loc.at(-1)).endsWith('…'), 'the name, cut')
      }
    }
  })

  it('lists the first 100 problems of a body with 20,000, and counts them all in the detail', async () => {
    // Each an item of a union (an event's name is one of several): worded once each, not compared
    // with every other, and not all sent back.
    const payload = { url: 'https://example.com/hook', events: Array<string>(20_000).fill('no.such_event') }
    const response = await t.app.inject({ method: 'POST', url: '/webhooks', headers: agency.headers, payload })
    assert.equal(response.statusCode, 422)
    const body = response.json<ValidationErrorBody>()
    assert.equal(body.errors.length, 100)
    assert.deepEqual(body.errors[0], { loc: ['body', 'events'], msg: 'must NOT have more than 24 items' })
    assert.deepEqual(body.errors[99]!.loc, ['body', 'events', 98])
    assert.equal(body.detail, 'Invalid body.events: must NOT have more than 24 items (and 20000 more problems).')
  })

  it('names each of 95,000 unknown fields apart, those whose names hold / or ~ too, and counts them all', async () => {
    const payload: Record<string, unknown> = { ...propertyBody(), 'x/y': 1, 'x~1y': 2, x: { y: 3 } }
    for (let field = 0; field < 95_000; field++) payload[`f${field}`] = 0
    const response = await t.app.inject({ method: 'POST', url: '/properties', headers: agency.headers, payload })
    assert.equal(response.statusCode, 422)
    const body = response.json<ValidationErrorBody>()
    assert.deepEqual(
      body.errors.slice(0, 4).map(({ loc }) => loc),
      [
        ['body', 'x/y'],
        ['body', 'x~1y'],
        ['body', 'x'],
        ['body', 'f0'],
      ],
    )
    assert.equal(body.errors.length, 100)
    assert.equal(body.detail, 'Invalid body.x/y: is not an allowed field (and 95002 more problems).')
  })

  it('walks a deeply nested body without overflowing the stack', async () => {
    const property = await submitProperty(t.app, agency)
    const nested = `${'['.repeat(5000)}"\\u0000"${']'.repeat(5000)}`
    const response = await t.app.inject({
      method: 'DELETE',
      url: `/properties/${property.id}`,
      headers: { ...agency.headers, 'content-type': 'application/json' },
      payload: nested,
    })
    assert.equal(response.statusCode, 422, response.body)
    assert.equal(response.json<ValidationErrorBody>().errors[0]!.loc.length, 5001)
    const untouched = await t.app.inject({ url: `/properties/${property.id}`, headers: agency.headers })
    assert.equal(untouched.statusCode, 200)
  })

  it('says a query parameter given twice must be given once, on public and agency routes alike', async () => {
    const cases: [string, Record<string, string>, string][] = [
      ['/mls/properties?city_id=1&city_id=1', {}, 'city_id'],
      ['/mls/properties?sort=price_asc&sort=price_desc', {}, 'sort'],
      ['/mls/clusters?bbox=37,55,38,56&bbox=37,55,38,56&zoom=9', {}, 'bbox'],
      ['/properties?limit=10&limit=20', agency.headers, 'limit'],
    ]
    for (const [url, headers, parameter] of cases) {
      const response = await t.app.inject({ url, headers })
      assert.equal(response.statusCode, 422, `${url}: ${response.body}`)
      const body = response.json<ValidationErrorBody>()
      assert.equal(body.detail, `Invalid query.${parameter}: must be given once.`, url)
      assert.deepEqual(body.errors, [{ loc: ['query', parameter], msg: 'must be given once' }], url)
    }
    // A parameter given once with a value of the wrong type is still told its type.
    const wrong = (await t.app.inject('/mls/properties?city_id=abc')).json<ValidationErrorBody>()
    assert.equal(wrong.detail, 'Invalid query.city_id: must be an integer in decimal digits.')
  })

  it('refuses numbers that are not finite, such as 1e400, which a query string turns into Infinity', async () => {
    for (const query of ['min_price=1e400', 'max_area=1e400', 'max_price=-1e400']) {
      const response = await t.app.inject(`/mls/properties?${query}`)
      assert.equal(response.statusCode, 422, `${query}: ${response.body}`)
      assert.match(response.json<ErrorBody>().detail, /^Invalid query\.(min|max)_(price|area): must be a finite number\.$/)
    }
    for (const query of ['max_price=Infinity', 'min_area=Infinity', 'max_price=-Infinity', 'min_price=NaN']) {
      const response = await t.app.inject(`/mls/properties?${query}`)
      assert.equal(response.statusCode, 422, `${query}: ${response.body}`)
    }
    const large = await t.app.inject('/mls/properties?max_price=1e300')
    assert.equal(large.statusCode, 200, large.body)
  })

  it('reads numbers in a path or a query only as decimal digits, not as JavaScript would', async () => {
    // ajv alone would read 0x10 as 16, ' 5' and '+5' as 5, and 1e0 or 1.0 as the integer 1.
    const refused: [string, string, string][] = [
      ['/mls/properties/0x1', 'path.id', 'an integer'],
      ['/mls/properties/1e0', 'path.id', 'an integer'],
      ['/mls/properties/1.0', 'path.id', 'an integer'],
      ['/mls/properties/%201', 'path.id', 'an integer'],
      ['/mls/properties?limit=0x10', 'query.limit', 'an integer'],
      ['/mls/properties?limit=%2B5', 'query.limit', 'an integer'],
      ['/mls/properties?city_id=%201', 'query.city_id', 'an integer'],
      ['/mls/properties?min_price=0x10', 'query.min_price', 'a number'],
      ['/mls/properties?max_area=1_000', 'query.max_area', 'a number'],
      [`/properties/0x1`, 'path.id', 'an integer'],
      ['/properties?status_id=0b1', 'query.status_id', 'an integer'],
    ]
    for (const [url, field, kind] of refused) {
      const response = await t.app.inject({ url, headers: agency.headers })
      assert.equal(response.statusCode, 422, `${url}: ${response.body}`)
      assert.equal(response.json<ErrorBody>().detail, `Invalid ${field}: must be ${kind} in decimal digits.`, url)
    }
    // Every problem at once, the other fields' too.
    const several = await t.app.inject('/mls/properties?limit=%2B5&sort=bogus&offset=-1')
    const reported = several.json<ValidationErrorBody>().errors.map((error) => error.loc.join('.'))
    assert.deepEqual([...reported].sort(), ['query.limit', 'query.offset', 'query.sort'])
    // An id past what the column holds is a 422, not a database error.
    const tooLarge = await t.app.inject({ url: '/property-images?property_id=2147483648', headers: agency.headers })
    assert.equal(tooLarge.statusCode, 422, tooLarge.body)
    for (const url of ['/mls/properties?min_price=1e6&max_price=2500000.50&limit=05&offset=0', '/mls/properties?min_area=-0&city_id=1']) {
      const response = await t.app.inject(url)
      assert.equal(response.statusCode, 200, `${url}: ${response.body}`)
    }
  })

  it('tells a PATCH of nothing, in words, to name a field to change', async () => {
    const property = await submitProperty(t.app, agency)
    const response = await t.app.inject({ method: 'PATCH', url: `/properties/${property.id}`, headers: agency.headers, payload: {} })
    assert.equal(response.statusCode, 422, response.body)
    assert.deepEqual(response.json<ValidationErrorBody>().errors, [{ loc: ['body'], msg: 'must name at least one field to change' }])
  })

  it('says a text is too long, not that it should have been null', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/properties',
      headers: agency.headers,
      payload: propertyBody({ description: 'я'.repeat(10_001) }),
    })
    assert.equal(response.statusCode, 422)
    assert.equal(response.json<ErrorBody>().detail, 'Invalid body.description: must NOT have more than 10000 characters.')
  })

  it('answers a path that is not valid percent-encoding, or too long for the router, with a JSON 400 with the headers of every answer', async () => {
    for (const url of ['/mls/properties/%FF', '/properties/%E0%A4%A', `/mls/properties/${'1'.repeat(1300)}`]) {
      const response = await t.app.inject({ url, headers: { ...agency.headers, origin: 'https://portal.example', 'x-request-id': 'bad-url-1' } })
      assert.equal(response.statusCode, 400, url)
      assert.match(response.headers['content-type'] as string, /^application\/json/)
      assert.deepEqual(Object.keys(response.json<ErrorBody>()), ['detail'])
      // No hook runs for it: the headers every answer carries are set where it is answered.
      assert.equal(response.headers['x-request-id'], 'bad-url-1', url)
      assert.equal(response.headers['x-content-type-options'], 'nosniff', url)
      assert.equal(response.headers['x-frame-options'], 'DENY', url)
      assert.match(String(response.headers['content-security-policy']), /default-src 'none'; ?frame-ancestors 'none'/, url)
      assert.equal(response.headers['access-control-allow-origin'], '*', url)
    }
  })

  it('answers a request the HTTP parser refuses with a JSON 400', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = new URL(address)
    // Raw UTF-8 in the request line, as a hand-made client might send it.
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write(Buffer.from('GET /mls/properties?city=Москва HTTP/1.1\r\nHost: x\r\n\r\n')))
      let answer = ''
      socket.on('data', (chunk) => (answer += chunk.toString()))
      socket.on('close', () => resolve(answer))
      socket.on('error', reject)
    })
    assert.match(raw, /^HTTP\/1\.1 400 Bad Request\r\n/)
    assert.match(raw, /content-type: application\/json/i)
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as ErrorBody
    assert.equal(body.detail, 'The request URL is not valid: characters outside ASCII must be percent-encoded.')
  })

  it('answers an HTTP/1.1 request without a Host header with a JSON 400 and the headers of every answer', async () => {
    const port = t.app.server.listening ? (t.app.server.address() as AddressInfo).port : new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('GET /tenants/me HTTP/1.1\r\nConnection: close\r\n\r\n'))
      let answer = ''
      socket.on('data', (chunk) => (answer += chunk.toString()))
      socket.on('close', () => resolve(answer))
      socket.on('error', reject)
    })
    assert.match(raw, /^HTTP\/1\.1 400 Bad Request\r\n/)
    assert.match(raw, /\r\ncontent-type: application\/json/i)
    assert.match(raw, /\r\nx-content-type-options: nosniff\r\n/i)
    assert.match(raw, /\r\nx-request-id: [0-9a-f-]{36}\r\n/i)
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as ErrorBody
    assert.equal(body.detail, 'An HTTP/1.1 request must carry a Host header.')
  })

  it('refuses a JSON body in another charset than UTF-8 (415) or with bytes that are not UTF-8 (400), rather than store U+FFFD for its letters', async () => {
    const before = await propertyCount()
    // "caf" and the bytes given for "é", in a listing's description.
    const [head, tail] = JSON.stringify(propertyBody({ description: 'caf\u0001' })).split('\\u0001') as [string, string]
    const cafe = (...bytes: number[]) => Buffer.concat([Buffer.from(head), Buffer.from(bytes), Buffer.from(tail)])
    for (const [contentType, body, status] of [
      ['application/json; charset=iso-8859-1', cafe(0xe9), 415],
      ['application/json; charset="windows-1251"', cafe(0xe9), 415],
      ['application/json', cafe(0xe9), 400],
      ['application/json; charset=utf-8', cafe(0xff, 0xfe), 400],
      ['application/json; charset=us-ascii', cafe(0xe9), 400],
    ] as const) {
      const response = await t.app.inject({ method: 'POST', url: '/properties', headers: { ...agency.headers, 'content-type': contentType }, payload: body })
      assert.equal(response.statusCode, status, `${contentType}: ${response.body}`)
      assert.match(response.json<ErrorBody>().detail, /UTF-8/)
    }
    const utf8 = await t.app.inject({
      method: 'POST',
      url: '/properties',
      headers: { ...agency.headers, 'content-type': 'application/json; charset=UTF-8' },
      payload: cafe(0xc3, 0xa9),
    })
    assert.equal(utf8.statusCode, 201, utf8.body)
    assert.equal(utf8.json<Property>().description, 'café')
    // ASCII is UTF-8's first 128 characters: a body labelled so is read as it is.
    const ascii = await t.app.inject({
      method: 'POST',
      url: '/properties',
      headers: { ...agency.headers, 'content-type': 'application/json; charset=US-ASCII' },
      payload: JSON.stringify(propertyBody({ description: 'Bright flat, park view.' })),
    })
    assert.equal(ascii.statusCode, 201, ascii.body)
    assert.equal(await propertyCount(), before + 2)
  })

  it('refuses a compressed body with a 415 that says so, not as broken JSON', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/tenants/register',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(JSON.stringify(registrationBody())),
    })
    assert.equal(response.statusCode, 415, response.body)
    assert.match(response.json<ErrorBody>().detail, /Content-Encoding \(gzip\)/)
    // With the headers every answer carries, so a page on another site can read why.
    assert.equal(response.headers['x-content-type-options'], 'nosniff')
    assert.equal(response.headers['access-control-allow-origin'], '*')
    // Nothing compressed about `identity`, however often it is said.
    const identity = await t.app.inject({
      method: 'POST',
      url: '/tenants/register',
      headers: { 'content-type': 'application/json', 'content-encoding': 'identity, identity' },
      payload: registrationBody({ email: 'identity@agency.example' }),
    })
    assert.equal(identity.statusCode, 201, identity.body)
  })

  it('ignores a query parameter no route reads, whatever it holds: a NUL in a tracking parameter is not refused', async () => {
    for (const url of ['/healthz?utm_source=%00', '/?utm_source=%00', '/property-types?x=%00', '/webhooks?x=%00', '/tenants/me?x=%00', '/properties?x=%00']) {
      const response = await t.app.inject({ url, headers: agency.headers })
      assert.equal(response.statusCode, 200, `${url}: ${response.body}`)
    }
  })

  it('refuses a __proto__ field as a field the API does not have, not as broken JSON', async () => {
    for (const payload of ['{"property_type":"Дом","deal_type":"Продажа","__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}']) {
      const response = await t.app.inject({ method: 'POST', url: '/properties', headers: { ...agency.headers, 'content-type': 'application/json' }, payload })
      assert.equal(response.statusCode, 422, response.body)
      const answer = response.json<ValidationErrorBody>()
      assert.match(answer.detail, /__proto__ or constructor\.prototype/)
      assert.deepEqual(answer.errors[0]!.loc, ['body'])
    }
  })

  it('refuses the fields of a body sent to an operation that takes none, and does nothing', async () => {
    const property = await submitProperty(t.app, agency)
    const remove = (payload: unknown) =>
      t.app.inject({ method: 'DELETE', url: `/properties/${property.id}`, headers: agency.headers, payload: payload as object })
    const extra = await remove({ status_id: 2, bogus: 1 })
    assert.equal(extra.statusCode, 422, extra.body)
    assert.deepEqual(
      extra.json<ValidationErrorBody>().errors.map((error) => error.loc),
      [
        ['body', 'status_id'],
        ['body', 'bogus'],
      ],
    )
    const notAnObject = await remove([1])
    assert.equal(notAnObject.statusCode, 422, notAnObject.body)
    assert.deepEqual(notAnObject.json<ValidationErrorBody>().errors[0]!.loc, ['body'])
    assert.equal((await t.app.inject({ url: `/properties/${property.id}`, headers: agency.headers })).statusCode, 200, 'not deleted')

    const registration = await t.app.inject({ method: 'POST', url: '/tenants/register', payload: registrationBody({ email: 'no-body@agency.example' }) })
    const code = registration.json<{ request_code: string }>().request_code
    const approve = (payload: object) => t.app.inject({ method: 'POST', url: `/admin/registrations/${code}/approve`, headers: adminHeaders, payload })
    assert.equal((await approve({ tenant_id: 99 })).statusCode, 422)
    assert.equal((await approve({})).statusCode, 200, 'an empty object is no field')
  })

  it('takes a request labelled JSON with no body as having none, where the operation may be sent without one', async () => {
    const labelled = { ...agency.headers, 'content-type': 'application/json' }
    const property = await submitProperty(t.app, agency)
    const response = await t.app.inject({ method: 'DELETE', url: `/properties/${property.id}`, headers: labelled })
    assert.equal(response.statusCode, 204, response.body)

    // Every field of a new key is optional: a bare POST creates one, labelled or not.
    const key = await t.app.inject({ method: 'POST', url: '/tenants/me/api-keys', headers: labelled })
    assert.equal(key.statusCode, 201, key.body)
    // A PATCH may be sent without a body too, and is told what it lacks.
    const kept = await submitProperty(t.app, agency)
    const patch = await t.app.inject({ method: 'PATCH', url: `/properties/${kept.id}`, headers: labelled })
    assert.equal(patch.statusCode, 422, patch.body)

    // A submission cannot be: the answer says the body is missing.
    const empty = await t.app.inject({ method: 'POST', url: '/properties', headers: labelled })
    assert.equal(empty.statusCode, 400)
    assert.equal(empty.json<ErrorBody>().detail, 'The request body is empty; send a JSON object.')
  })
})
