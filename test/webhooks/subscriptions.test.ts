import assert from 'node:assert/strict'
import { createServer, type AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, type Tenant } from '../helpers/factories.js'
import type { ErrorBody, ValidationErrorBody } from '../helpers/responses.js'
import type { CreatedWebhookSubscription, DeliveryLogEntry, WebhookSubscription } from '../../src/modules/webhooks/webhooks.schemas.js'
import { ADDRESS_CASES, seenAs, urlHost } from '../helpers/ssrf-addresses.js'
import { deliveryLog, startReceiver, subscribe, verifyDelivery, type Receiver } from '../helpers/webhooks.js'

const SUBSCRIPTION_FIELDS = ['created_at', 'description', 'disabled_at', 'disabled_reason', 'events', 'filter', 'id', 'is_active', 'url']

describe('webhook subscriptions', () => {
  let t: TestApp
  let guarded: TestApp
  let agency: Tenant
  let rival: Tenant
  let receiver: Receiver

  before(async () => {
    receiver = await startReceiver(({ body }) =>
      body.includes('"subscription_id"') && receiver.requests.length % 2 === 1 ? { status: 500, body: 'down for maintenance' } : { status: 204 },
    )
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', WEBHOOK_TIMEOUT_MS: '1000' })
    agency = await createTenant(t.app, { email: 'hooks@agency.example' })
    rival = await createTenant(t.app, { email: 'rival-hooks@agency.example' })
    guarded = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'false' })
  })
  after(async () => {
    await t.close()
    await guarded.close()
    await receiver.close()
  })

  it('creates a subscription: 201, Location, every field of a subscription and a whsec_ secret shown once, never cached', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/webhooks',
      headers: agency.headers,
      payload: { url: receiver.url, events: ['mls.new_listing', 'property.published', 'mls.new_listing'], description: 'CRM' },
    })
    assert.equal(response.statusCode, 201, response.body)
    const created = response.json<CreatedWebhookSubscription>()
    assert.equal(response.headers.location, `/webhooks/${created.id}`)
    assert.equal(response.headers['cache-control'], 'no-store', 'the secret is never cached')
    assert.deepEqual(Object.keys(created).sort(), [...SUBSCRIPTION_FIELDS, 'secret'].sort())
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]+={0,2}$/)
    assert.ok(Buffer.from(created.secret.slice(6), 'base64').length >= 24)
    assert.equal(created.url, receiver.url)
    assert.deepEqual(created.events, ['mls.new_listing', 'property.published'])
    assert.equal(created.description, 'CRM')
    assert.equal(created.is_active, true)
    assert.match(created.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/)

    // Encrypted at rest: the secret is nowhere in the row.
    const [row] = await queryRows<Record<string, unknown>>(t.db, sql`select * from webhook_subscriptions where id = ${created.id}::int`)
    assert.ok(!JSON.stringify(row).includes(created.secret.slice(6)))

    const list = await t.app.inject({ method: 'GET', url: '/webhooks', headers: agency.headers })
    assert.equal(list.statusCode, 200)
    const subscriptions = list.json<WebhookSubscription[]>()
    assert.ok(Array.isArray(subscriptions))
    const listed = subscriptions.find((entry) => entry.id === created.id)!
    assert.deepEqual(Object.keys(listed).sort(), SUBSCRIPTION_FIELDS)
    assert.ok(!list.body.includes('whsec_'))

    // Its Location reads it back as the list shows it.
    const read = await t.app.inject({ method: 'GET', url: response.headers.location, headers: agency.headers })
    assert.equal(read.statusCode, 200, read.body)
    assert.deepEqual(read.json<WebhookSubscription>(), listed)
    assert.ok(!read.body.includes('whsec_'))
  })

  it('defaults description to null', async () => {
    const created = await subscribe(t.app, agency, { url: receiver.url, events: ['property.rejected'] })
    assert.equal(created.description, null)
  })

  it('refuses bad bodies with 422 naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ url: receiver.url, events: [] }, 'events'],
      [{ url: receiver.url, events: ['mls.deleted_listing'] }, 'events'],
      [{ url: receiver.url }, 'events'],
      [{ events: ['mls.new_listing'] }, 'url'],
      [{ url: receiver.url, events: ['mls.new_listing'], secret: 'mine' }, 'secret'],
      [{ url: 'not a url', events: ['mls.new_listing'] }, 'url'],
      [{ url: 'ftp://example.com/hooks', events: ['mls.new_listing'] }, 'url'],
      [{ url: 'https://user:pass@example.com/hooks', events: ['mls.new_listing'] }, 'url'],
      // A parser would drop these, and the URL be stored and shown as written.
      [{ url: ` ${receiver.url}`, events: ['mls.new_listing'] }, 'url'],
      [{ url: `${receiver.url}\n`, events: ['mls.new_listing'] }, 'url'],
    ]
    for (const [payload, field] of cases) {
      const response = await t.app.inject({ method: 'POST', url: '/webhooks', headers: agency.headers, payload })
      assert.equal(response.statusCode, 422, `${JSON.stringify(payload)}: ${response.body}`)
      const body = response.json<ValidationErrorBody>()
      assert.ok(body.detail.length > 0)
      assert.ok(
        body.errors.some((error) => error.loc.includes(field)),
        `${JSON.stringify(payload)}: ${response.body}`,
      )
    }
  })

  it('refuses plain http, loopback and private hosts while the private-network rule is on', async () => {
    for (const url of [
      receiver.url,
      'https://127.0.0.1/hooks',
      'https://localhost/hooks',
      'https://10.1.2.3/hooks',
      'https://[::1]/hooks',
      'https://169.254.169.254/latest',
    ]) {
      const response = await guarded.app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: await guardedTenant(),
        payload: { url, events: ['mls.new_listing'] },
      })
      assert.equal(response.statusCode, 422, `${url}: ${response.body}`)
      assert.deepEqual(response.json<ValidationErrorBody>().errors[0]!.loc, ['body', 'url'])
    }
    const [row] = await queryRows<{ n: number }>(guarded.db, sql`select count(*)::int as n from webhook_subscriptions`)
    assert.equal(row!.n, 0)
  })

  it('judges the address a URL parser reads, and the IPv4 address inside an IPv6 one: non-public is a 422, public a 201', async () => {
    const headers = await guardedTenant()
    for (const entry of ADDRESS_CASES) {
      const url = `https://${urlHost(entry.address)}:8443/hooks`
      const response = await guarded.app.inject({ method: 'POST', url: '/webhooks', headers, payload: { url, events: ['mls.new_listing'] } })
      if (entry.public) {
        assert.equal(response.statusCode, 201, `${url} (${entry.form}): ${response.body}`)
        const created = response.json<CreatedWebhookSubscription>()
        assert.equal((await guarded.app.inject({ method: 'DELETE', url: `/webhooks/${created.id}`, headers })).statusCode, 204)
        continue
      }
      assert.equal(response.statusCode, 422, `${url} (${entry.form}): ${response.body}`)
      const body = response.json<ValidationErrorBody>()
      assert.equal(body.detail, `Invalid webhook url: the address ${seenAs(entry)} is private or otherwise non-public.`, `${url} (${entry.form})`)
      assert.deepEqual(body.errors[0]!.loc, ['body', 'url'])
    }
    const [row] = await queryRows<{ n: number }>(guarded.db, sql`select count(*)::int as n from webhook_subscriptions`)
    assert.equal(row!.n, 0)
  })

  let guardedHeaders: Record<string, string> | undefined
  async function guardedTenant() {
    guardedHeaders ??= (await createTenant(guarded.app, { email: 'guarded@agency.example' })).headers
    return guardedHeaders
  }

  it('asks for the API key on every route', async () => {
    const routes = [
      ['POST', '/webhooks'],
      ['GET', '/webhooks'],
      ['GET', '/webhooks/1'],
      ['DELETE', '/webhooks/1'],
      ['POST', '/webhooks/1/test'],
      ['GET', '/webhooks/1/logs'],
    ] as const
    for (const [method, url] of routes) {
      for (const headers of [{}, { 'x-api-key': 'mls_live_not-a-key' }]) {
        const response = await t.app.inject({ method, url, headers, ...(method === 'POST' ? { payload: {} } : {}) })
        assert.equal(response.statusCode, 401, `${method} ${url}`)
        assert.deepEqual(response.json<ErrorBody>(), { detail: 'Invalid or missing API key' })
      }
    }
  })

  it('keeps each agency to its own subscriptions: another’s id is a 404 that changes nothing', async () => {
    const mine = await subscribe(t.app, agency, { url: receiver.url, events: ['mls.new_listing'] })
    const theirs = await t.app.inject({ method: 'GET', url: '/webhooks', headers: rival.headers })
    assert.deepEqual(theirs.json<WebhookSubscription[]>(), [])
    const sentBefore = receiver.requests.length
    for (const [method, url] of [
      ['GET', `/webhooks/${mine.id}`],
      ['DELETE', `/webhooks/${mine.id}`],
      ['POST', `/webhooks/${mine.id}/test`],
      ['GET', `/webhooks/${mine.id}/logs`],
    ] as const) {
      const response = await t.app.inject({ method, url, headers: rival.headers })
      assert.equal(response.statusCode, 404, `${method} ${url}`)
      assert.deepEqual(response.json<ErrorBody>(), { detail: 'Webhook not found' })
    }
    assert.equal(receiver.requests.length, sentBefore, 'no test event was sent for the rival')
    const still = await t.app.inject({ method: 'GET', url: '/webhooks', headers: agency.headers })
    assert.ok(still.json<WebhookSubscription[]>().some((entry) => entry.id === mine.id))
    assert.equal((await deliveryLog(t.app, agency, mine.id)).total, 0)
  })

  it('changes the url only of the agency’s own subscription, and only to a url it could subscribe', async () => {
    const mine = await subscribe(t.app, agency, { url: receiver.url, events: ['mls.new_listing'] })
    await t.db.execute(sql`update webhook_subscriptions set failing_since = now() - interval '3 days' where id = ${mine.id}::int`)
    const stored = async () =>
      (
        await queryRows<{ url: string; failing: boolean }>(
          t.db,
          sql`select url, failing_since is not null as failing from webhook_subscriptions where id = ${mine.id}::int`,
        )
      )[0]
    const foreign = await t.app.inject({ method: 'PATCH', url: `/webhooks/${mine.id}`, headers: rival.headers, payload: { url: `${receiver.url}/elsewhere` } })
    assert.equal(foreign.statusCode, 404, foreign.body)
    assert.deepEqual(foreign.json<ErrorBody>(), { detail: 'Webhook not found' })
    for (const url of ['not a url', 'ftp://example.com/hooks', ` ${receiver.url}`]) {
      const refused = await t.app.inject({ method: 'PATCH', url: `/webhooks/${mine.id}`, headers: agency.headers, payload: { url } })
      assert.equal(refused.statusCode, 422, `${url}: ${refused.body}`)
      assert.deepEqual(refused.json<ValidationErrorBody>().errors[0]?.loc, ['body', 'url'])
    }
    assert.deepEqual(await stored(), { url: receiver.url, failing: true }, 'neither the rival nor a refused url changed it')
  })

  it('refuses ids that are not whole numbers with 422, and finds none for ids no subscription can have', async () => {
    for (const [url, status] of [
      ['/webhooks/abc', 422],
      ['GET /webhooks/abc', 422],
      ['GET /webhooks/0', 404],
      ['/webhooks/1.5/test', 422],
      ['/webhooks/0/test', 404],
      ['/webhooks/-1/logs', 404],
    ] as const) {
      const [method, path]: ['GET' | 'POST' | 'DELETE', string] = url.startsWith('GET ')
        ? ['GET', url.slice(4)]
        : [url.endsWith('test') ? 'POST' : url.endsWith('logs') ? 'GET' : 'DELETE', url]
      const response = await t.app.inject({ method, url: path, headers: agency.headers })
      assert.equal(response.statusCode, status, url)
      if (status === 404) assert.deepEqual(response.json<ErrorBody>(), { detail: 'Webhook not found' })
    }
  })

  it('sends a signed webhook.test now and answers 200 with its log entry, failed or not', async () => {
    const created = await subscribe(t.app, agency, { url: receiver.url, events: ['property.rejected'] })
    const before = receiver.requests.length

    const first = await t.app.inject({ method: 'POST', url: `/webhooks/${created.id}/test`, headers: agency.headers })
    assert.equal(first.statusCode, 200, first.body)
    const entry = first.json<DeliveryLogEntry>()
    assert.equal(receiver.requests.length, before + 1)
    const received = receiver.requests.at(-1)!
    const message = verifyDelivery(created.secret, received)
    assert.equal(message.type, 'webhook.test')
    assert.equal(message.data.subscription_id, created.id)
    assert.equal(received.headers['webhook-id'], `msg_${entry.event_id}`)
    assert.deepEqual(Object.keys(entry).sort(), [
      'attempt',
      'created_at',
      'duration_ms',
      'error',
      'event_id',
      'event_type',
      'id',
      'next_attempt_at',
      'response_body',
      'response_status_code',
      'status',
      'trigger',
    ])
    assert.equal(entry.event_type, 'webhook.test')
    assert.equal(entry.trigger, 'test')
    assert.equal(entry.attempt, 1)
    const succeeded = entry.status === 'succeeded'
    // The receiver fails every other test event: check both answers across two calls.
    const second = (await t.app.inject({ method: 'POST', url: `/webhooks/${created.id}/test`, headers: agency.headers })).json<DeliveryLogEntry>()
    const [ok, failed] = succeeded ? [entry, second] : [second, entry]
    assert.equal(ok.status, 'succeeded')
    assert.equal(ok.response_status_code, 204)
    assert.equal(ok.error, null)
    assert.equal(failed.status, 'failed')
    assert.equal(failed.response_status_code, 500)
    assert.equal(failed.response_body, 'down for maintenance')
    assert.match(failed.error!, /^http_status: /)
    assert.equal(failed.next_attempt_at, null)

    // A test is never retried, and is in the log, newest first.
    const log = await deliveryLog(t.app, agency, created.id)
    assert.equal(log.total, 2)
    assert.deepEqual(
      log.items.map((item) => item.id),
      [second.id, entry.id],
    )
    assert.deepEqual(log.items[0], second)
    const [pending] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from webhook_deliveries where status = 'pending'`)
    assert.equal(pending!.n, 0)
  })

  it('reports an unreachable receiver in the test entry', async () => {
    const created = await subscribe(t.app, agency, { url: 'http://127.0.0.1:9/hooks', events: ['mls.new_listing'] })
    const response = await t.app.inject({ method: 'POST', url: `/webhooks/${created.id}/test`, headers: agency.headers })
    assert.equal(response.statusCode, 200)
    const entry = response.json<DeliveryLogEntry>()
    assert.equal(entry.status, 'failed')
    assert.equal(entry.next_attempt_at, null, 'a test event is not retried')
    assert.equal(entry.response_status_code, null)
    assert.match(entry.error!, /^connection: /)
  })

  it('pages the log with limit and offset, and refuses limits outside 1..100', async () => {
    const created = await subscribe(t.app, agency, { url: receiver.url, events: ['mls.new_listing'] })
    for (let i = 0; i < 3; i++) await t.app.inject({ method: 'POST', url: `/webhooks/${created.id}/test`, headers: agency.headers })
    const all = await deliveryLog(t.app, agency, created.id)
    assert.equal(all.total, 3)
    assert.equal(all.limit, 50)
    assert.equal(all.offset, 0)
    const page = await deliveryLog(t.app, agency, created.id, '?limit=1&offset=1')
    assert.deepEqual(page, { items: [all.items[1]], total: 3, limit: 1, offset: 1 })
    assert.deepEqual((await deliveryLog(t.app, agency, created.id, '?offset=3')).items, [])
    for (const query of ['?limit=0', '?limit=101', '?offset=-1', '?limit=x']) {
      const response = await t.app.inject({ method: 'GET', url: `/webhooks/${created.id}/logs${query}`, headers: agency.headers })
      assert.equal(response.statusCode, 422, query)
    }
  })

  it('logs any three-digit status a receiver answers, and an error naming a long host cut to fit the log', async () => {
    // HTTP lets a server send any three digits; node:http would not, so the answer is written by hand.
    const odd = createServer((socket) => {
      socket.on('error', () => undefined)
      socket.once('data', () => socket.end('HTTP/1.1 999 Odd\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok'))
    })
    await new Promise<void>((resolve) => odd.listen(0, '127.0.0.1', resolve))
    try {
      const created = await subscribe(t.app, agency, { url: `http://127.0.0.1:${(odd.address() as AddressInfo).port}/hooks`, events: ['mls.new_listing'] })
      const response = await t.app.inject({ method: 'POST', url: `/webhooks/${created.id}/test`, headers: agency.headers })
      assert.equal(response.statusCode, 200, response.body)
      assert.equal(response.json<DeliveryLogEntry>().response_status_code, 999)
      assert.equal(response.json<DeliveryLogEntry>().status, 'failed')
      assert.equal((await deliveryLog(t.app, agency, created.id)).items[0]?.response_status_code, 999)
    } finally {
      await new Promise((resolve) => odd.close(resolve))
    }

    // A URL may be 2,048 characters long, and an error may name its host.
    const host = Array.from({ length: 32 }, () => 'a'.repeat(62)).join('.')
    const long = await subscribe(t.app, agency, { url: `http://${host}`.slice(0, 2000) + '/hooks', events: ['mls.new_listing'] })
    const response = await t.app.inject({ method: 'POST', url: `/webhooks/${long.id}/test`, headers: agency.headers })
    assert.equal(response.statusCode, 200, response.body.slice(0, 300))
    const entry = response.json<DeliveryLogEntry>()
    assert.equal(entry.status, 'failed')
    assert.ok(entry.error!.length <= 2000 && entry.error!.endsWith('…'), entry.error!)
    assert.equal((await t.app.inject({ url: `/webhooks/${long.id}/logs`, headers: agency.headers })).statusCode, 200)
  })

  it('answers a test event sent while its subscription is deleted 200 (sent first) or 404 (deleted first)', async () => {
    const outcomes: number[] = []
    for (let round = 0; round < 10; round++) {
      const created = await subscribe(t.app, agency, { url: 'http://127.0.0.1:9/hooks', events: ['mls.new_listing'] })
      const [test, removal] = await Promise.all([
        t.app.inject({ method: 'POST', url: `/webhooks/${created.id}/test`, headers: agency.headers }),
        t.app.inject({ method: 'DELETE', url: `/webhooks/${created.id}`, headers: agency.headers }),
      ])
      assert.equal(removal.statusCode, 204, removal.body)
      outcomes.push(test.statusCode)
    }
    assert.deepEqual(
      outcomes.filter((status) => status !== 200 && status !== 404),
      [],
      outcomes.join(', '),
    )
  })

  it('keeps an agency to 20 subscriptions: a 21st is a 409 until one is deleted', async () => {
    const busy = await createTenant(t.app)
    const made = []
    for (let index = 0; index < 20; index++) made.push(await subscribe(t.app, busy, { url: `${receiver.url}${index}`, events: ['mls.new_listing'] }))
    const payload = { url: receiver.url, events: ['mls.new_listing'] }
    const refused = await t.app.inject({ method: 'POST', url: '/webhooks', headers: busy.headers, payload })
    assert.equal(refused.statusCode, 409, refused.body)
    assert.deepEqual(refused.json<ErrorBody>(), { detail: 'An agency may have at most 20 webhook subscriptions; delete one first.' })
    assert.equal((await t.app.inject({ url: '/webhooks', headers: busy.headers })).json<WebhookSubscription[]>().length, 20)
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/webhooks/${made[0]!.id}`, headers: busy.headers })).statusCode, 204)
    assert.equal((await t.app.inject({ method: 'POST', url: '/webhooks', headers: busy.headers, payload })).statusCode, 201)
  })

  it('deletes a subscription (204), cancelling its pending deliveries; a second delete is a 404', async () => {
    const created = await subscribe(t.app, agency, { url: receiver.url, events: ['property.published'] })
    await t.db.execute(sql`insert into events (type, tenant_id, data) values ('property.published', ${agency.tenantId}::int, '{}'::jsonb)`)
    await t.app.services.webhooks.fanOut(100)
    const [queued] = await queryRows<{ n: number }>(
      t.db,
      sql`select count(*)::int as n from webhook_deliveries where subscription_id = ${created.id}::int and status = 'pending'`,
    )
    assert.equal(queued!.n, 1)

    const response = await t.app.inject({ method: 'DELETE', url: `/webhooks/${created.id}`, headers: agency.headers })
    assert.equal(response.statusCode, 204)
    assert.equal(response.body, '')
    const [left] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from webhook_deliveries where subscription_id = ${created.id}::int`)
    assert.equal(left!.n, 0)
    const again = await t.app.inject({ method: 'DELETE', url: `/webhooks/${created.id}`, headers: agency.headers })
    assert.equal(again.statusCode, 404)
    const list = await t.app.inject({ method: 'GET', url: '/webhooks', headers: agency.headers })
    assert.ok(!list.json<WebhookSubscription[]>().some((entry) => entry.id === created.id))
  })
})
