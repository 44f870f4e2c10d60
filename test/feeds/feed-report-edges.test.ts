/**
 * Feed imports at their edges: place names, long values the report quotes, and a feed deleted
 * while its run withdraws offers. Every report read here also has counts that add up.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import type { FeedRunReport } from '../../src/modules/feeds/feeds.schemas.js'
import { FeedRunJob } from '../../src/modules/feeds/feed-runs.job.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { adminHeaders, createTenant, type Tenant } from '../helpers/factories.js'
import { startFeedServer, type FeedServer, type ServedFile } from '../helpers/feed-server.js'
import { createFeed, feedXml, listingByExternalId, numberedOffers, runFeedNow, type TestOffer } from '../helpers/feeds.js'
import { jobContext } from '../helpers/jobs.js'

/** FeedRunProblem in the OpenAPI document (feeds.schemas.ts): internal_id maxLength 1000, message maxLength 2000. */
const PROBLEM_INTERNAL_ID_MAX = 1000
const PROBLEM_MESSAGE_MAX = 2000

/** offers = created + updated + unchanged + rejected (docs/feeds.md, runs and their reports). */
function assertCountsAddUp(report: FeedRunReport): void {
  const { offers, created, updated, unchanged, rejected } = report.counts
  assert.equal(created + updated + unchanged + rejected, offers, `counts do not add up: ${JSON.stringify(report.counts)}`)
}

describe('feed imports: places, long values, reports and deletion during a run', () => {
  let t: TestApp
  let server: FeedServer
  let serial = 0

  before(async () => {
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', FEED_POLL_INTERVAL_MS: '50' })
    server = await startFeedServer()
  })
  after(async () => {
    await t.close()
    await server.close()
  })

  const context = () => jobContext(t)
  const agency = () => createTenant(t.app, { email: `feed-edges-${++serial}@agency.example` })

  /** A feed serving `file`, whose schedule starts no run during the test. */
  async function feedServing(tenant: Tenant, file: ServedFile, extra: Record<string, unknown> = {}) {
    const path = `/edges-${++serial}.xml`
    server.serve(path, file)
    const feed = await createFeed(t.app, tenant, { url: server.url(path), ...extra })
    await t.db.execute(sql`update feeds set next_run_at = now() + interval '1 day' where id = ${feed.id}::int`)
    return { feed, path }
  }

  async function importOffers(tenant: Tenant, offers: TestOffer[]): Promise<FeedRunReport> {
    const { feed } = await feedServing(tenant, { body: feedXml(offers) })
    const report = await runFeedNow(t.app, context(), tenant, feed.id)
    assertCountsAddUp(report)
    return report
  }

  // docs/feeds.md, Places: `г.` and `город` before a city are ignored, never the first letter of
  // a city whose own name begins with Г.
  it('finds a city whose name begins with «Г» when the feed writes it with «г.» or «город» in front', async () => {
    const city = await t.app.inject({
      method: 'POST',
      url: '/admin/cities',
      headers: adminHeaders,
      payload: { name: 'Гатчина', country: 'RU', region: 'Ленинградская область', latitude: 59.57, longitude: 30.13 },
    })
    assert.equal(city.statusCode, 201, city.body)
    const tenant = await agency()
    const report = await importOffers(tenant, [
      { id: 'gat-plain', locality: 'Гатчина' },
      { id: 'gat-dot', locality: 'г. Гатчина' },
      { id: 'gat-word', locality: 'город Гатчина' },
    ])
    assert.deepEqual(
      report.problems.items.filter((problem) => problem.code === 'unknown_locality'),
      [],
      'an offer naming the city with «г.» / «город» was refused as an unknown locality',
    )
    assert.equal(report.counts.created, 3, JSON.stringify(report.counts))
    assert.equal((await listingByExternalId(t.app, tenant, 'gat-dot'))?.location?.city_id, city.json<{ id: number }>().id)
  })

  // docs/feeds.md, The owner: the owner is the sales-agent's name. A name of exactly 200
  // characters, as the API counts them (code points), fits: an emoji at its end is one.
  it('keeps a sales-agent name of 200 characters whole, never cutting a character in half', async () => {
    const tenant = await agency()
    const name = `${'а'.repeat(199)}😀`
    assert.equal([...name].length, 200)
    const report = await importOffers(tenant, [{ id: 'owner-emoji', agent: { name, phone: '+7 912 345-67-89' } }])
    assert.equal(report.counts.created, 1, JSON.stringify(report))
    const listing = await listingByExternalId(t.app, tenant, 'owner-emoji')
    assert.equal(listing?.owner?.name, name)
  })

  // FeedRunProblem.message is at most 2000 characters (feeds.schemas.ts, the OpenAPI document),
  // while an image URL of up to 2048 is taken: image_download_failed quotes it shortened.
  it('keeps an image_download_failed message within the 2000 characters a problem message may have', async () => {
    const tenant = await agency()
    const missing = server.url(`/photos/${'p'.repeat(1990)}.jpg`)
    assert.ok(missing.length <= 2048)
    const report = await importOffers(tenant, [{ id: 'long-photo', images: [missing] }])
    const problem = report.problems.items.find((item) => item.code === 'image_download_failed')
    assert.ok(problem, JSON.stringify(report.problems))
    assert.ok(problem.message.length <= PROBLEM_MESSAGE_MAX, `message is ${problem.message.length} characters long`)
  })

  // FeedRunProblem.internal_id is at most 1000 characters, however long the internal-id of an
  // offer refused for it.
  it('keeps the internal_id of an invalid_internal_id problem within the 1000 characters the schema allows', async () => {
    const tenant = await agency()
    const report = await importOffers(tenant, [{ id: 'x'.repeat(5000) }])
    const problem = report.problems.items.find((item) => item.code === 'invalid_internal_id')
    assert.ok(problem, JSON.stringify(report.problems).slice(0, 500))
    assert.ok(problem.internal_id.length <= PROBLEM_INTERNAL_ID_MAX, `internal_id is ${problem.internal_id.length} characters long`)
  })

  // docs/feeds.md, Problem codes: a refused offer lists every reason it was refused. With the
  // city unknown there is no country to judge the currency by: telling the agency to price a
  // tenge offer "в рублях (RUB)" would be wrong for a Kazakh city the operator has not added yet.
  it('does not tell an offer in an unknown city to price itself in roubles', async () => {
    const tenant = await agency()
    const report = await importOffers(tenant, [{ id: 'kz-unknown', locality: 'Туркестан', currency: 'KZT' }])
    assert.equal(report.counts.rejected, 1)
    assert.deepEqual(
      report.problems.items.map((problem) => problem.code),
      ['unknown_locality'],
      JSON.stringify(report.problems.items),
    )
  })

  // docs/feeds.md: deleting a feed deletes its runs and memory; the listings it brought in stay
  // the agency's, to manage through the API. A DELETE that lands while the run withdraws the
  // offers that left the file stops the withdrawals. The real withdrawal is wrapped, unchanged,
  // only to send the DELETE at that moment.
  it('withdraws no more listings once its feed is deleted during the run', async () => {
    const tenant = await agency()
    const { feed, path } = await feedServing(tenant, { body: feedXml(numberedOffers(6, 'gone')) }, { allow_mass_withdrawal: true })
    const first = await runFeedNow(t.app, context(), tenant, feed.id)
    assert.equal(first.counts.created, 6, JSON.stringify(first))
    server.serve(path, { body: feedXml(numberedOffers(1, 'gone')) })

    // The agency deletes the feed just as the run starts withdrawing the five offers that left.
    const properties = t.app.services.properties
    const original = properties.withdrawGoneOffer.bind(properties)
    let deleted = false
    properties.withdrawGoneOffer = async (tenantId: number, id: number) => {
      if (!deleted) {
        deleted = true
        const response = await t.app.inject({ method: 'DELETE', url: `/feeds/${feed.id}`, headers: tenant.headers })
        assert.equal(response.statusCode, 204, response.body)
      }
      return original(tenantId, id)
    }
    try {
      const started = await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: tenant.headers })
      assert.equal(started.statusCode, 202, started.body)
      const job = new FeedRunJob({ pollIntervalMs: 50 })
      while ((await job.runOnce(context())) > 0) {
        // until no run is left to take
      }
    } finally {
      properties.withdrawGoneOffer = original
    }
    assert.ok(deleted, 'the run never withdrew anything')
    const statuses: number[] = []
    for (let i = 2; i <= 6; i++) statuses.push((await listingByExternalId(t.app, tenant, `gone-${i}`))!.status_id)
    const withdrawn = statuses.filter((status) => status === 4).length
    // The one withdrawal already under way when the DELETE came may finish; no other.
    assert.ok(withdrawn <= 1, `${withdrawn} of 5 listings were withdrawn after their feed was deleted: ${statuses.join(', ')}`)
  })
})
