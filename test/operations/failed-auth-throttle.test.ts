import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { connect, createServer, type Server } from 'node:net'
import type { LightMyRequestResponse } from 'fastify'
import pino from 'pino'
import { ADMIN_KEY, buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, registrationBody, type Tenant } from '../helpers/factories.js'
import type { ErrorBody } from '../helpers/responses.js'
import { freePort } from '../helpers/service-process.js'
import { waitFor } from '../helpers/webhooks.js'

const LIMIT = 30
const throttled = { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_FAILURES_PER_MINUTE: String(LIMIT) }
const WRONG_KEY = 'mls_live_this-key-was-never-issued-000000000000'

function assertThrottled(response: LightMyRequestResponse, what: string): void {
  assert.equal(response.statusCode, 429, `${what}: ${response.body}`)
  assert.match(response.headers['content-type'] as string, /^application\/json/)
  assert.match(response.json<ErrorBody>().detail, /^Too many failed requests from this address .*; retry in \d+ seconds\.$/)
  const retryAfter = Number(response.headers['retry-after'])
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${response.headers['retry-after']}`)
}

const wrongApiKey = (t: TestApp, remoteAddress: string) => t.app.inject({ url: '/tenants/me', headers: { 'x-api-key': WRONG_KEY }, remoteAddress })
const wrongAdminKey = (t: TestApp, remoteAddress: string) =>
  t.app.inject({ url: '/admin/registrations', headers: { 'x-admin-key': 'not-the-admin-key-000000' }, remoteAddress })
const unknownRoute = (t: TestApp, remoteAddress: string) => t.app.inject({ url: `/wp-admin/${randomUUID()}.php`, remoteAddress })

describe('failed key checks and unknown routes, counted per client address', () => {
  let t: TestApp
  let agency: Tenant
  before(async () => {
    t = await buildTestApp(throttled)
    agency = await createTenant(t.app)
  })
  after(() => t.close())

  it('refuses an address past its wrong API keys with 429, before its key is looked up', async () => {
    const attacker = '203.0.113.10'
    for (let i = 1; i <= LIMIT; i++) assert.equal((await wrongApiKey(t, attacker)).statusCode, 401, `wrong key ${i}`)
    assertThrottled(await wrongApiKey(t, attacker), `wrong key ${LIMIT + 1}`)
    // A valid key from that address is refused too: the count is read before the key is.
    assertThrottled(await t.app.inject({ url: '/tenants/me', headers: agency.headers, remoteAddress: attacker }), 'a valid key from the blocked address')

    // The agency, from its own address, is not slowed; nor is another address's first mistake.
    const own = await t.app.inject({ url: '/tenants/me', headers: agency.headers, remoteAddress: '198.51.100.20' })
    assert.equal(own.statusCode, 200, own.body)
    assert.equal((await wrongApiKey(t, '198.51.100.21')).statusCode, 401)
  })

  it('counts requests without any key as failed key checks', async () => {
    const attacker = '203.0.113.11'
    for (let i = 1; i <= LIMIT; i++) assert.equal((await t.app.inject({ url: '/properties', remoteAddress: attacker })).statusCode, 401)
    assertThrottled(await t.app.inject({ url: '/properties', remoteAddress: attacker }), 'no key')
  })

  it('refuses an address past its wrong admin keys, the right key included', async () => {
    const attacker = '203.0.113.12'
    for (let i = 1; i <= LIMIT; i++) assert.equal((await wrongAdminKey(t, attacker)).statusCode, 401, `wrong admin key ${i}`)
    assertThrottled(await wrongAdminKey(t, attacker), 'wrong admin key')
    assertThrottled(
      await t.app.inject({ url: '/admin/registrations', headers: { 'x-admin-key': ADMIN_KEY }, remoteAddress: attacker }),
      'the right admin key from the blocked address',
    )
    const operator = await t.app.inject({ url: '/admin/registrations', headers: { 'x-admin-key': ADMIN_KEY }, remoteAddress: '198.51.100.22' })
    assert.equal(operator.statusCode, 200, operator.body)
  })

  it('refuses an address scanning for routes, and leaves it the public catalogue', async () => {
    const scanner = '203.0.113.13'
    for (let i = 1; i <= LIMIT; i++) {
      const response = await unknownRoute(t, scanner)
      assert.equal(response.statusCode, 404, `unknown route ${i}`)
      assert.match(response.json<ErrorBody>().detail, /^There is no GET \/wp-admin\/.* route\.$/)
    }
    assertThrottled(await unknownRoute(t, scanner), 'unknown route')
    assertThrottled(await t.app.inject({ url: '/properties', headers: agency.headers, remoteAddress: scanner }), 'a keyed route')
    // The catalogue and reference data touch no key; they keep their own limits.
    assert.equal((await t.app.inject({ url: '/mls/properties', remoteAddress: scanner })).statusCode, 200)
    assert.equal((await t.app.inject({ url: '/cities/1', remoteAddress: scanner })).statusCode, 200)
  })

  it('does not count a route that found nothing, such as a photo since deleted', async () => {
    const viewer = '198.51.100.24'
    for (let i = 0; i <= LIMIT; i++) {
      const missing = await t.app.inject({ url: `/media/photos/deleted-${i}.jpg`, remoteAddress: viewer })
      assert.equal(missing.statusCode, 404, missing.body)
    }
    assert.equal((await wrongApiKey(t, viewer)).statusCode, 401)
  })

  it('adds every kind of failure to one count', async () => {
    const attacker = '203.0.113.14'
    for (let i = 0; i < LIMIT / 3; i++) {
      assert.equal((await wrongApiKey(t, attacker)).statusCode, 401)
      assert.equal((await wrongAdminKey(t, attacker)).statusCode, 401)
      assert.equal((await unknownRoute(t, attacker)).statusCode, 404)
    }
    assertThrottled(await wrongApiKey(t, attacker), 'the next failure of any kind')
  })

  it('counts an IPv6 client by its /64, which one holder can fill with addresses', async () => {
    for (let i = 1; i <= LIMIT; i++) assert.equal((await wrongApiKey(t, `2001:db8:7:1::${i.toString(16)}`)).statusCode, 401)
    assertThrottled(await wrongApiKey(t, '2001:db8:7:1:abcd::1'), 'another address of the same /64')
    assert.equal((await wrongApiKey(t, '2001:db8:7:2::1')).statusCode, 401)
  })

  it('counts nothing successful', async () => {
    const busy = '198.51.100.23'
    for (let i = 0; i <= LIMIT; i++) assert.equal((await t.app.inject({ url: '/tenants/me', headers: agency.headers, remoteAddress: busy })).statusCode, 200)
    assert.equal((await wrongApiKey(t, busy)).statusCode, 401)
  })

  /** How many answers had each status code. */
  function tally(responses: LightMyRequestResponse[]): Record<number, number> {
    const counts: Record<number, number> = {}
    for (const response of responses) counts[response.statusCode] = (counts[response.statusCode] ?? 0) + 1
    return counts
  }

  // Each guess takes its failure before its key is looked up: sent together, they cannot all
  // pass the count first.
  for (const [what, url, header, address] of [
    ['API keys', '/tenants/me', 'x-api-key', '203.0.113.60'],
    ['admin keys', '/admin/registrations', 'x-admin-key', '203.0.113.61'],
  ] as const) {
    it(`answers at most RATE_LIMIT_FAILURES_PER_MINUTE wrong ${what} sent at once with 401, the rest with 429`, async () => {
      const guesses = 4 * LIMIT
      const responses = await Promise.all(
        Array.from({ length: guesses }, (_, i) => t.app.inject({ url, headers: { [header]: `mls_live_guess-${i}-${randomUUID()}` }, remoteAddress: address })),
      )
      const counts = tally(responses)
      assert.ok((counts[401] ?? 0) <= LIMIT, `${counts[401]} of ${guesses} guesses were answered 401; at most ${LIMIT} may be: ${JSON.stringify(counts)}`)
      assert.equal(counts[429], guesses - (counts[401] ?? 0), JSON.stringify(counts))
    })
  }

  it('answers at most RATE_LIMIT_FAILURES_PER_MINUTE unknown URLs sent at once with 404, the rest with 429', async () => {
    const probes = 2 * LIMIT
    const responses = await Promise.all(
      Array.from({ length: probes }, (_, i) => t.app.inject({ url: `/wp-admin/probe-${i}.php`, remoteAddress: '203.0.113.65' })),
    )
    const counts = tally(responses)
    assert.equal(counts[404], LIMIT, JSON.stringify(counts))
    assert.equal(counts[429], probes - LIMIT, JSON.stringify(counts))
  })

  it('answers a burst of a right key this process has not looked up yet with 200s: one lookup, its failure given back', async () => {
    const created = await t.app.inject({ method: 'POST', url: '/tenants/me/api-keys', headers: agency.headers, payload: { name: 'Новый' } })
    assert.equal(created.statusCode, 201, created.body)
    const key = created.json<{ key: string }>().key
    const responses = await Promise.all(
      Array.from({ length: 4 * LIMIT }, () => t.app.inject({ url: '/tenants/me', headers: { 'x-api-key': key }, remoteAddress: '203.0.113.62' })),
    )
    assert.deepEqual(tally(responses), { 200: 4 * LIMIT })
    // Nothing of the burst stayed counted: LIMIT wrong keys are still answered 401.
    for (let i = 1; i <= LIMIT; i++) assert.equal((await wrongApiKey(t, '203.0.113.62')).statusCode, 401, `wrong key ${i}`)
    assertThrottled(await wrongApiKey(t, '203.0.113.62'), 'one failure too many')
  })
  it('answers a burst of more right keys than its failures, none looked up yet, with 200s (an integrator serving many agencies)', async () => {
    const keys: string[] = []
    // An agency holds at most 20 keys: two agencies hold enough for LIMIT + 6.
    for (const owner of [await createTenant(t.app), await createTenant(t.app)]) {
      for (let i = 0; i < LIMIT / 2 + 3; i++) {
        const created = await t.app.inject({ method: 'POST', url: '/tenants/me/api-keys', headers: owner.headers, payload: { name: `CRM ${i}` } })
        assert.equal(created.statusCode, 201, created.body)
        keys.push(created.json<{ key: string }>().key)
      }
    }
    const integrator = '203.0.113.63'
    const responses = await Promise.all(keys.map((key) => t.app.inject({ url: '/tenants/me', headers: { 'x-api-key': key }, remoteAddress: integrator })))
    assert.deepEqual(tally(responses), { 200: keys.length })
    for (let i = 1; i <= LIMIT; i++) assert.equal((await wrongApiKey(t, integrator)).statusCode, 401, `wrong key ${i}`)
    assertThrottled(await wrongApiKey(t, integrator), 'one failure too many')
  })
})

for (const [setting, proxies] of [
  ['true', ['10.0.0.1']],
  ['203.0.113.9, 10.0.0.0/8', ['203.0.113.9', '10.0.0.1']],
] as const) {
  describe(`failures of a caller behind proxies (TRUST_PROXY=${setting})`, () => {
    let t: TestApp
    before(async () => {
      t = await buildTestApp({ ...throttled, TRUST_PROXY: setting })
    })
    after(() => t.close())

    // Each proxy appends the address it saw; what comes before is whatever the caller wrote.
    const behindProxies = (caller: string, written: string[]) =>
      t.app.inject({
        url: '/tenants/me',
        headers: { 'x-api-key': WRONG_KEY, 'x-forwarded-for': [...written, caller, ...proxies.slice(0, -1)].join(', ') },
        remoteAddress: proxies.at(-1)!,
      })

    it('counts them by the address the proxies saw, whatever the caller writes in X-Forwarded-For', async () => {
      const caller = '198.51.100.70'
      for (let i = 1; i <= LIMIT; i++) assert.equal((await behindProxies(caller, [`192.0.2.${i}`])).statusCode, 401, `wrong key ${i}`)
      assertThrottled(await behindProxies(caller, ['192.0.2.200', '10.1.2.3']), 'other made-up entries')
      // Another caller behind the same proxies is not refused for it.
      const other = await behindProxies('198.51.100.71', [])
      assert.equal(other.statusCode, 401, other.body)
    })

    it('takes X-Forwarded-For from no one else: a caller reaching the service directly is counted by its own address', async () => {
      const direct = '198.51.100.80'
      const answers = []
      for (let i = 1; i <= LIMIT + 1; i++) {
        answers.push(await t.app.inject({ url: '/tenants/me', headers: { 'x-api-key': WRONG_KEY, 'x-forwarded-for': `192.0.2.${i}` }, remoteAddress: direct }))
      }
      assertThrottled(answers.at(-1)!, 'a direct caller writing a new X-Forwarded-For each time')
    })
  })
}

describe('a key looked up for two addresses at once', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_FAILURES_PER_MINUTE: '1' })
  })
  after(() => t.close())

  it('answers it 200 from an address without failures, whatever the other address’s count', async () => {
    const agency = await createTenant(t.app)
    // A key this process has not looked up yet.
    const created = await t.app.inject({ method: 'POST', url: '/tenants/me/api-keys', headers: agency.headers, payload: { name: 'Second office' } })
    const key = created.json<{ key: string }>().key
    const shared = '203.0.113.1' // a NAT, one of whose clients sends a wrong key
    const [wrong, fromShared, fromClean] = await Promise.all([
      wrongApiKey(t, shared),
      t.app.inject({ url: '/tenants/me', headers: { 'x-api-key': key }, remoteAddress: shared }),
      t.app.inject({ url: '/tenants/me', headers: { 'x-api-key': key }, remoteAddress: '198.51.100.7' }),
    ])
    // The shared address has one failure: whichever of its requests took it, the other waits or is refused.
    assert.ok([401, 429].includes(wrong.statusCode), wrong.body)
    assert.ok([200, 429].includes(fromShared.statusCode), fromShared.body)
    assert.equal(fromClean.statusCode, 200, `a right key from an address without failures: ${fromClean.body}`)
  })
})

describe('the failure throttle switched off with the rate limits', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({ RATE_LIMIT_ENABLED: 'false', RATE_LIMIT_FAILURES_PER_MINUTE: '2' })
  })
  after(() => t.close())

  it('lets every failure be answered for what it is', async () => {
    for (let i = 0; i < 5; i++) assert.equal((await wrongApiKey(t, '203.0.113.20')).statusCode, 401)
    for (let i = 0; i < 5; i++) assert.equal((await unknownRoute(t, '203.0.113.20')).statusCode, 404)
  })
})

describe('the failure throttle while Redis is unreachable', () => {
  let t: TestApp
  before(async () => {
    // Nothing listens there: every Redis command fails at once.
    t = await buildTestApp({ ...throttled, REDIS_URL: `redis://127.0.0.1:${await freePort()}` })
  })
  after(() => t.close())

  it('keeps answering, and counts in the process meanwhile', async () => {
    const attacker = '203.0.113.30'
    for (let i = 1; i <= LIMIT; i++) assert.equal((await wrongApiKey(t, attacker)).statusCode, 401, `wrong key ${i}`)
    assertThrottled(await wrongApiKey(t, attacker), 'past the limit, counted in the process')
    assert.equal((await t.app.inject({ url: '/healthz', remoteAddress: attacker })).statusCode, 200)
  })
})

describe('Redis for rate limits going away and coming back', () => {
  const PINO_WARN = 40
  const PINO_INFO = 30
  let t: TestApp
  let port: number
  const lines: { level: number; msg: string }[] = []
  let proxy: Server | undefined

  before(async () => {
    port = await freePort()
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) })
    t = await buildTestApp({ ...throttled, REDIS_URL: `redis://127.0.0.1:${port}` }, { logger })
  })
  after(async () => {
    await t.close()
    await new Promise((resolve) => (proxy ? proxy.close(resolve) : resolve(undefined)))
  })

  const outageLines = () => lines.filter((line) => line.level === PINO_WARN && /^redis for rate limits is unavailable/.test(line.msg))

  it('logs an outage once, however many reconnections fail', async () => {
    const redis = t.app.rateLimitRedis!
    let attempts = 0
    redis.on('reconnecting', () => attempts++)
    await waitFor(() => attempts >= 4, 30_000, 'four reconnection attempts')
    assert.equal(outageLines().length, 1, JSON.stringify(lines))
  })

  it('logs its end once Redis answers again', { skip: !process.env.REDIS_URL && 'needs REDIS_URL' }, async () => {
    // Redis appears at the address the service was given: a forwarder to the machine's.
    const target = new URL(process.env.REDIS_URL!)
    proxy = createServer((client) => {
      const upstream = connect(Number(target.port || 6379), target.hostname)
      client.pipe(upstream).pipe(client)
      client.on('error', () => upstream.destroy())
      upstream.on('error', () => client.destroy())
    })
    await new Promise<void>((resolve) => proxy!.listen(port, '127.0.0.1', resolve))
    await waitFor(() => lines.some((line) => line.level === PINO_INFO && line.msg === 'redis for rate limits is reachable again'), 30_000, 'the recovery line')
    assert.equal(outageLines().length, 1)
  })
})

describe('the failure throttle shared through Redis', { skip: !process.env.REDIS_URL && 'needs REDIS_URL' }, () => {
  const apps: TestApp[] = []
  before(async () => {
    // Counts stay in Redis between runs: a prefix of its own keeps this run's apart.
    const env = { ...throttled, REDIS_URL: process.env.REDIS_URL!, REDIS_KEY_PREFIX: `test-${randomUUID()}:` }
    apps.push(await buildTestApp(env), await buildTestApp(env))
  })
  after(() => Promise.all(apps.map((t) => t.close())))

  it('counts one address’s failures across two API processes', async () => {
    const [first, second] = apps as [TestApp, TestApp]
    const attacker = '203.0.113.40'
    for (let i = 0; i < LIMIT / 2; i++) {
      assert.equal((await wrongApiKey(first, attacker)).statusCode, 401)
      assert.equal((await unknownRoute(second, attacker)).statusCode, 404)
    }
    assertThrottled(await wrongAdminKey(first, attacker), 'on the first process')
    assertThrottled(await wrongApiKey(second, attacker), 'on the second process')
    assert.equal((await wrongApiKey(second, '203.0.113.41')).statusCode, 401)
  })
})

describe('limits per address behind a proxy that writes the client’s port (203.0.113.5:4711)', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({
      TRUST_PROXY: 'true',
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_CATALOGUE_PER_MINUTE: '2',
      RATE_LIMIT_REGISTRATION_PER_HOUR: '1',
      RATE_LIMIT_FAILURES_PER_MINUTE: '1',
    })
  })
  after(() => t.close())

  // Each of a client's connections comes from a port of its own; the address is what is counted.
  const catalogue = (forwardedFor: string) => t.app.inject({ url: '/mls/properties', headers: { 'x-forwarded-for': forwardedFor } })

  it('counts the catalogue’s requests by the address, an IPv6 one by its /64, whatever the port or brackets', async () => {
    const v4 = [await catalogue('203.0.113.5:4711'), await catalogue('203.0.113.5:4712'), await catalogue('203.0.113.5:4713')]
    assert.deepEqual(
      v4.map((answer) => answer.statusCode),
      [200, 200, 429],
    )
    const v6 = [await catalogue('[2001:db8::1]:443'), await catalogue('[2001:db8::2]:50000'), await catalogue('2001:db8::3')]
    assert.deepEqual(
      v6.map((answer) => answer.statusCode),
      [200, 200, 429],
    )
  })

  it('counts registrations and failed key checks by the address, whatever the port', async () => {
    const register = (forwardedFor: string) =>
      t.app.inject({ method: 'POST', url: '/tenants/register', payload: registrationBody(), headers: { 'x-forwarded-for': forwardedFor } })
    assert.equal((await register('198.51.100.44:1000')).statusCode, 201)
    assert.equal((await register('198.51.100.44:1001')).statusCode, 429)
    const wrong = (forwardedFor: string) => t.app.inject({ url: '/tenants/me', headers: { 'x-api-key': WRONG_KEY, 'x-forwarded-for': forwardedFor } })
    assert.equal((await wrong('198.51.100.45:2000')).statusCode, 401)
    assertThrottled(await wrong('198.51.100.45:2001'), 'a wrong key from the same address on another port')
  })
})

describe('limits per address behind a CDN that writes itself with a port, before a load balancer', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({ TRUST_PROXY: '203.0.113.9,2001:db8::9,10.0.0.0/8', RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_CATALOGUE_PER_MINUTE: '1' })
  })
  after(() => t.close())

  const search = (forwardedFor: string) => t.app.inject({ url: '/mls/properties', remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': forwardedFor } })

  it('passes over the CDN written with a port, and counts each client behind it apart', async () => {
    for (const [cdn, first, second] of [
      ['203.0.113.9:4711', '198.51.100.7', '198.51.100.8'],
      ['[2001:db8::9]:443', '198.51.100.17', '198.51.100.18'],
    ] as const) {
      assert.equal((await search(`${first}, ${cdn}`)).statusCode, 200)
      assert.equal((await search(`${first}, ${cdn}`)).statusCode, 429, `${first} past its limit`)
      const other = await search(`${second}, ${cdn}`)
      assert.equal(other.statusCode, 200, `${second} behind ${cdn}: ${other.body}`)
    }
  })
})
