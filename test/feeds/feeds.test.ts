import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import type { Feed, FeedRunReport, FeedRunSummary } from '../../src/modules/feeds/feeds.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, type Tenant } from '../helpers/factories.js'
import type { ErrorBody, ValidationErrorBody } from '../helpers/responses.js'

const FEED_FIELDS = ['allow_mass_withdrawal', 'created_at', 'format', 'id', 'last_run', 'next_run_at', 'schedule', 'updated_at', 'url']
const FEED_URL = 'http://127.0.0.1:9/feed.xml'

interface Page<T> {
  items: T[]
  total: number
  limit: number
  offset: number
}

async function createFeed(t: TestApp, tenant: Tenant, body: Record<string, unknown> = {}): Promise<Feed> {
  const response = await t.app.inject({ method: 'POST', url: '/feeds', headers: tenant.headers, payload: { url: FEED_URL, format: 'yandex_realty', ...body } })
  assert.equal(response.statusCode, 201, response.body)
  return response.json<Feed>()
}

describe('feeds', () => {
  let t: TestApp
  let guarded: TestApp
  let agency: Tenant
  let rival: Tenant

  before(async () => {
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true' })
    guarded = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'false' })
    agency = await createTenant(t.app, { email: 'feeds@agency.example' })
    rival = await createTenant(t.app, { email: 'rival-feeds@agency.example' })
  })
  after(async () => {
    await t.close()
    await guarded.close()
  })

  it('creates a feed: 201, Location, defaults, every field', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/feeds', headers: agency.headers, payload: { url: FEED_URL, format: 'yandex_realty' } })
    assert.equal(response.statusCode, 201, response.body)
    const feed = response.json<Feed>()
    assert.equal(response.headers.location, `/feeds/${feed.id}`)
    assert.deepEqual(Object.keys(feed).sort(), FEED_FIELDS)
    assert.equal(feed.url, FEED_URL)
    assert.equal(feed.format, 'yandex_realty')
    assert.equal(feed.schedule, 60)
    assert.equal(feed.allow_mass_withdrawal, false)
    assert.equal(feed.last_run, null)
    // Due at once: the first run starts at the scheduler's next poll.
    assert.ok(Date.parse(feed.next_run_at) <= Date.now())

    const fetched = await t.app.inject({ method: 'GET', url: `/feeds/${feed.id}`, headers: agency.headers })
    assert.equal(fetched.statusCode, 200)
    assert.deepEqual(fetched.json<Feed>(), feed)
    await t.app.inject({ method: 'DELETE', url: `/feeds/${feed.id}`, headers: agency.headers })
  })

  it('takes schedule and allow_mass_withdrawal, and changes them with PATCH', async () => {
    const feed = await createFeed(t, agency, { schedule: 15, allow_mass_withdrawal: true })
    assert.equal(feed.schedule, 15)
    assert.equal(feed.allow_mass_withdrawal, true)
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/feeds/${feed.id}`,
      headers: agency.headers,
      payload: { schedule: 10080, allow_mass_withdrawal: false },
    })
    assert.equal(patched.statusCode, 200, patched.body)
    const changed = patched.json<Feed>()
    assert.equal(changed.schedule, 10080)
    assert.equal(changed.allow_mass_withdrawal, false)
    // A new schedule counts from now.
    assert.ok(Date.parse(changed.next_run_at) > Date.now() + 10079 * 60_000)
    const url = await t.app.inject({ method: 'PATCH', url: `/feeds/${feed.id}`, headers: agency.headers, payload: { url: 'http://127.0.0.1:9/other.xml' } })
    assert.equal(url.json<Feed>().url, 'http://127.0.0.1:9/other.xml')
    await t.app.inject({ method: 'DELETE', url: `/feeds/${feed.id}`, headers: agency.headers })
  })

  it('refuses bad bodies with 422 naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ format: 'yandex_realty' }, 'url'],
      [{ url: FEED_URL }, 'format'],
      [{ url: FEED_URL, format: 'avito' }, 'format'],
      [{ url: FEED_URL, format: 'yandex_realty', schedule: 14 }, 'schedule'],
      [{ url: FEED_URL, format: 'yandex_realty', schedule: 10081 }, 'schedule'],
      [{ url: FEED_URL, format: 'yandex_realty', schedule: 60.5 }, 'schedule'],
      [{ url: FEED_URL, format: 'yandex_realty', allow_mass_withdrawal: 'yes' }, 'allow_mass_withdrawal'],
      [{ url: FEED_URL, format: 'yandex_realty', extra: 1 }, 'extra'],
      [{ url: 'not a url', format: 'yandex_realty' }, 'url'],
      [{ url: 'ftp://example.com/feed.xml', format: 'yandex_realty' }, 'url'],
      [{ url: 'https://user:pass@example.com/feed.xml', format: 'yandex_realty' }, 'url'],
      [{ url: 'https://example.com/feed.xml ', format: 'yandex_realty' }, 'url'],
    ]
    for (const [payload, field] of cases) {
      const response = await t.app.inject({ method: 'POST', url: '/feeds', headers: agency.headers, payload })
      assert.equal(response.statusCode, 422, `${JSON.stringify(payload)}: ${response.body}`)
      const body = response.json<ValidationErrorBody>()
      assert.ok(body.detail.length > 0)
      assert.ok(
        body.errors.some((error) => error.loc.includes(field)),
        `${JSON.stringify(payload)}: ${response.body}`,
      )
    }
    const feed = await createFeed(t, agency)
    for (const payload of [{}, { schedule: 5 }, { url: 'file:///etc/passwd' }]) {
      const response = await t.app.inject({ method: 'PATCH', url: `/feeds/${feed.id}`, headers: agency.headers, payload })
      assert.equal(response.statusCode, 422, `${JSON.stringify(payload)}: ${response.body}`)
      assert.ok(response.json<ErrorBody>().detail.length > 0)
    }
    await t.app.inject({ method: 'DELETE', url: `/feeds/${feed.id}`, headers: agency.headers })
  })

  it('refuses plain http and private hosts while the private-network rule is on, naming body.url', async () => {
    const tenant = await createTenant(guarded.app, { email: 'guarded-feeds@agency.example' })
    for (const url of [
      'http://example.com/feed.xml',
      'https://127.0.0.1/feed.xml',
      'https://10.1.2.3/feed.xml',
      'https://[::1]/feed.xml',
      'https://localhost/feed.xml',
    ]) {
      const response = await guarded.app.inject({ method: 'POST', url: '/feeds', headers: tenant.headers, payload: { url, format: 'yandex_realty' } })
      assert.equal(response.statusCode, 422, `${url}: ${response.body}`)
      const body = response.json<ValidationErrorBody>()
      assert.deepEqual(body.errors[0]!.loc, ['body', 'url'])
      assert.match(body.detail, /^Invalid feed url: /)
    }
    const [row] = await queryRows<{ n: number }>(guarded.db, sql`select count(*)::int as n from feeds`)
    assert.equal(row!.n, 0)
  })

  it('allows at most 5 feeds per agency: the sixth is a 409 that stores nothing', async () => {
    const tenant = await createTenant(t.app, { email: 'five-feeds@agency.example' })
    const attempts = await Promise.all(
      Array.from({ length: 7 }, () =>
        t.app.inject({ method: 'POST', url: '/feeds', headers: tenant.headers, payload: { url: FEED_URL, format: 'yandex_realty' } }),
      ),
    )
    assert.deepEqual(attempts.map((response) => response.statusCode).sort(), [201, 201, 201, 201, 201, 409, 409])
    const refused = attempts.find((response) => response.statusCode === 409)!
    assert.match(refused.json<ErrorBody>().detail, /at most 5 feeds/)
    const list = await t.app.inject({ method: 'GET', url: '/feeds', headers: tenant.headers })
    assert.equal(list.json<Page<Feed>>().total, 5)
  })

  it('lists the agency’s feeds oldest first, paged', async () => {
    const tenant = await createTenant(t.app, { email: 'list-feeds@agency.example' })
    const created = [await createFeed(t, tenant), await createFeed(t, tenant), await createFeed(t, tenant)]
    const first = await t.app.inject({ method: 'GET', url: '/feeds?limit=2', headers: tenant.headers })
    assert.equal(first.statusCode, 200)
    const page = first.json<Page<Feed>>()
    assert.deepEqual(
      page.items.map((feed) => feed.id),
      created.slice(0, 2).map((feed) => feed.id),
    )
    assert.equal(page.total, 3)
    assert.equal(page.limit, 2)
    const second = (await t.app.inject({ method: 'GET', url: '/feeds?limit=2&offset=2', headers: tenant.headers })).json<Page<Feed>>()
    assert.deepEqual(
      second.items.map((feed) => feed.id),
      [created[2]!.id],
    )
    for (const query of ['limit=0', 'limit=101', 'offset=-1', 'limit=x']) {
      assert.equal((await t.app.inject({ method: 'GET', url: `/feeds?${query}`, headers: tenant.headers })).statusCode, 422, query)
    }
  })

  it('starts a run: 202 with the run running, Location, and a 409 while it is under way', async () => {
    const feed = await createFeed(t, agency)
    const started = await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: agency.headers })
    assert.equal(started.statusCode, 202, started.body)
    const run = started.json<FeedRunSummary>()
    assert.equal(started.headers.location, `/feeds/${feed.id}/runs/${run.id}`)
    assert.equal(run.status, 'running')
    assert.equal(run.trigger, 'manual')
    assert.equal(run.feed_id, feed.id)
    assert.equal(run.finished_at, null)
    assert.deepEqual(run.counts, { offers: 0, created: 0, updated: 0, unchanged: 0, withdrawn: 0, rejected: 0, errors: 0 })

    const again = await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: agency.headers })
    assert.equal(again.statusCode, 409)
    assert.match(again.json<ErrorBody>().detail, /already under way/)

    const runs = (await t.app.inject({ method: 'GET', url: `/feeds/${feed.id}/runs`, headers: agency.headers })).json<Page<FeedRunSummary>>()
    assert.deepEqual(runs.items, [run])
    const report = await t.app.inject({ method: 'GET', url: `/feeds/${feed.id}/runs/${run.id}`, headers: agency.headers })
    assert.equal(report.statusCode, 200)
    assert.deepEqual(report.json<FeedRunReport>(), { ...run, problems: { items: [], total: 0, limit: 50, offset: 0 } })
    const shown = (await t.app.inject({ method: 'GET', url: `/feeds/${feed.id}`, headers: agency.headers })).json<Feed>()
    assert.deepEqual(shown.last_run, run)
  })

  it('deletes a feed: 204, then 404, its runs gone with it', async () => {
    const feed = await createFeed(t, agency)
    await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: agency.headers })
    const deleted = await t.app.inject({ method: 'DELETE', url: `/feeds/${feed.id}`, headers: agency.headers })
    assert.equal(deleted.statusCode, 204)
    assert.equal(deleted.body, '')
    assert.equal((await t.app.inject({ method: 'GET', url: `/feeds/${feed.id}`, headers: agency.headers })).statusCode, 404)
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/feeds/${feed.id}`, headers: agency.headers })).statusCode, 404)
    const [row] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from feed_runs where feed_id = ${feed.id}::int`)
    assert.equal(row!.n, 0)
  })

  it('keeps each agency to its own feeds: another’s feed is a 404 that changes nothing', async () => {
    const feed = await createFeed(t, agency)
    const started = (await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: agency.headers })).json<FeedRunSummary>()
    const theirs = await t.app.inject({ method: 'GET', url: '/feeds', headers: rival.headers })
    assert.deepEqual(theirs.json<Page<Feed>>().items, [])
    const routes = [
      ['GET', `/feeds/${feed.id}`, undefined],
      ['PATCH', `/feeds/${feed.id}`, { schedule: 30 }],
      ['DELETE', `/feeds/${feed.id}`, undefined],
      ['POST', `/feeds/${feed.id}/runs`, undefined],
      ['GET', `/feeds/${feed.id}/runs`, undefined],
      ['GET', `/feeds/${feed.id}/runs/${started.id}`, undefined],
    ] as const
    for (const [method, url, payload] of routes) {
      const response = await t.app.inject({ method, url, headers: rival.headers, ...(payload ? { payload } : {}) })
      assert.equal(response.statusCode, 404, `${method} ${url}: ${response.body}`)
      assert.match(response.json<ErrorBody>().detail, /^Feed (run )?not found$/)
    }
    const still = (await t.app.inject({ method: 'GET', url: `/feeds/${feed.id}`, headers: agency.headers })).json<Feed>()
    assert.equal(still.schedule, feed.schedule)
    const runs = (await t.app.inject({ method: 'GET', url: `/feeds/${feed.id}/runs`, headers: agency.headers })).json<Page<FeedRunSummary>>()
    assert.equal(runs.total, 1)
    // A run of another feed of the same agency is not found under this one either.
    const other = await createFeed(t, agency)
    assert.equal((await t.app.inject({ method: 'GET', url: `/feeds/${other.id}/runs/${started.id}`, headers: agency.headers })).statusCode, 404)
  })

  it('asks for the API key on every route', async () => {
    const routes = [
      ['POST', '/feeds'],
      ['GET', '/feeds'],
      ['GET', '/feeds/1'],
      ['PATCH', '/feeds/1'],
      ['DELETE', '/feeds/1'],
      ['POST', '/feeds/1/runs'],
      ['GET', '/feeds/1/runs'],
      ['GET', '/feeds/1/runs/1'],
    ] as const
    for (const [method, url] of routes) {
      for (const headers of [{}, { 'x-api-key': 'mls_live_not-a-key' }]) {
        const response = await t.app.inject({ method, url, headers, ...(method === 'POST' || method === 'PATCH' ? { payload: {} } : {}) })
        assert.equal(response.statusCode, 401, `${method} ${url}`)
        assert.deepEqual(response.json<ErrorBody>(), { detail: 'Invalid or missing API key' })
      }
    }
  })

  it('refuses ids that are not whole numbers with 422, and finds none for ids no feed can have', async () => {
    for (const [method, url] of [
      ['GET', '/feeds/abc'],
      ['GET', '/feeds/1/runs/x'],
    ] as const) {
      const response = await t.app.inject({ method, url, headers: agency.headers })
      assert.equal(response.statusCode, 422, `${method} ${url}`)
      assert.ok(response.json<ErrorBody>().detail.length > 0)
    }
    const feed = await createFeed(t, agency)
    for (const [method, url, detail] of [
      ['DELETE', '/feeds/0', 'Feed not found'],
      ['POST', '/feeds/-1/runs', 'Feed not found'],
      ['GET', `/feeds/${feed.id}/runs/2147483648`, 'Feed run not found'],
    ] as const) {
      const response = await t.app.inject({ method, url, headers: agency.headers })
      assert.deepEqual([response.statusCode, response.json<ErrorBody>()], [404, { detail }], `${method} ${url}`)
    }
  })
})
