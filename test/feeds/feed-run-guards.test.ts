/**
 * A run against files made to hurt the reader, and against changes to its feed made while it
 * goes: what it reports stays readable, what it holds stays bounded, and a feed deleted or
 * moved meanwhile changes nothing the agency did not ask for.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import type { FeedRunSummary } from '../../src/modules/feeds/feeds.schemas.js'
import { FeedRunJob } from '../../src/modules/feeds/feed-runs.job.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, type Tenant } from '../helpers/factories.js'
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js'
import { createFeed, feedXml, listingByExternalId, runFeedNow, runReport, numberedOffers as offers } from '../helpers/feeds.js'
import { capturedLog, jobContext } from '../helpers/jobs.js'
import { waitFor } from '../helpers/webhooks.js'
import { photo } from '../helpers/photos.js'

describe('feed runs against hostile files and changes made meanwhile', () => {
  let t: TestApp
  let server: FeedServer
  let emails = 0

  before(async () => {
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', FEED_POLL_INTERVAL_MS: '50' })
    server = await startFeedServer()
  })
  after(async () => {
    await t.close()
    await server.close()
  })

  const context = () => jobContext(t)
  const agency = () => createTenant(t.app, { email: `guards-${++emails}@feeds.example` })

  /** A feed whose schedule will not start a run during the test. */
  async function feedAt(tenant: Tenant, path: string, extra: Record<string, unknown> = {}) {
    const feed = await createFeed(t.app, tenant, { url: server.url(path), ...extra })
    await t.db.execute(sql`update feeds set next_run_at = now() + interval '1 day' where id = ${feed.id}::int`)
    return feed
  }

  async function assertRunReadable(tenant: Tenant, feedId: number, runId: number, failureCode: string): Promise<void> {
    const report = await t.app.inject({ method: 'GET', url: `/feeds/${feedId}/runs/${runId}`, headers: tenant.headers })
    const feed = await t.app.inject({ method: 'GET', url: `/feeds/${feedId}`, headers: tenant.headers })
    const feeds = await t.app.inject({ method: 'GET', url: '/feeds', headers: tenant.headers })
    const runs = await t.app.inject({ method: 'GET', url: `/feeds/${feedId}/runs`, headers: tenant.headers })
    assert.deepEqual(
      [report.statusCode, feed.statusCode, feeds.statusCode, runs.statusCode],
      [200, 200, 200, 200],
      `GET report / feed / feeds / runs answered ${report.statusCode} ${feed.statusCode} ${feeds.statusCode} ${runs.statusCode}: ${report.body.slice(0, 200)}`,
    )
    const body = report.json<FeedRunSummary>()
    assert.equal(body.failure_code, failureCode)
    assert.ok((body.detail ?? '').length <= 2000, `detail is ${body.detail?.length} characters long (FeedRun.detail has maxLength 2000)`)
  }

  // A failed run says why in `detail` (docs/api.md; FeedRun.detail is at most 2000 characters):
  // a reason quoting the file, here a root element's name of 5,000 characters, is cut, and every
  // route that shows the run answers it.
  it('shows a run failed on a long root element name: no 500 on the report, the feed, the feed list or the runs', async () => {
    const tenant = await agency()
    const name = `x${'a'.repeat(5_000)}`
    server.serve('/long-root.xml', { body: `<?xml version="1.0" encoding="UTF-8"?>\n<${name}><offer internal-id="1"/></${name}>` })
    const feed = await feedAt(tenant, '/long-root.xml')
    const { id: runId } = await runFeedNow(t.app, context(), tenant, feed.id)
    await assertRunReadable(tenant, feed.id, runId, 'wrong_root')
  })

  // The same for the parser's own reason (not_xml), which names the attribute it refused.
  it('shows a run failed on a long duplicated attribute name: no 500 on the report or the feed', async () => {
    const tenant = await agency()
    const name = `x${'b'.repeat(5_000)}`
    server.serve('/long-attribute.xml', {
      body: `<?xml version="1.0" encoding="UTF-8"?>\n<realty-feed><offer internal-id="1" ${name}="1" ${name}="2"/></realty-feed>`,
    })
    const feed = await feedAt(tenant, '/long-attribute.xml')
    const { id: runId } = await runFeedNow(t.app, context(), tenant, feed.id)
    await assertRunReadable(tenant, feed.id, runId, 'not_xml')
  })

  // docs/feeds.md, "Reading the file": the parser holds every open element, a few hundred bytes
  // each however short its tag; elements nested over 100 deep stop the run, so half a million
  // nested `<a>` between offers (1.4 MiB of tags, or a small gzip of them) cost no memory.
  it('stops a file nesting elements over 100 deep outside its offers, holding none of them', async () => {
    const tenant = await agency()
    const levels = 500_000
    server.serve('/deep.xml', {
      body: async function* () {
        yield '<?xml version="1.0" encoding="UTF-8"?>\n<realty-feed>'
        for (let i = 0; i < levels; i += 10_000) yield '<a>'.repeat(10_000)
        for (let i = 0; i < levels; i += 10_000) yield '</a>'.repeat(10_000)
        yield '</realty-feed>'
      },
    })
    const feed = await feedAt(tenant, '/deep.xml')
    const report = await runFeedNow(t.app, context(), tenant, feed.id)
    assert.equal(
      report.status,
      'failed',
      `a file nesting ${levels} elements (${((levels * 3) / 1024 / 1024).toFixed(2)} MiB of open tags held at once) was ${report.status}`,
    )
    assert.equal(report.failure_code, 'offer_too_large')
  })

  // docs/feeds.md: deleting a feed deletes its runs. A run whose feed was deleted while it
  // downloaded the file asks the database before it applies anything, and stops.
  it('creates no listing from a feed deleted while its run was downloading the file', async () => {
    const tenant = await agency()
    let feedId = 0
    const body = feedXml(offers(3, 'gone'))
    server.serve('/deleted-feed.xml', {
      body: async function* () {
        const deleted = await t.app.inject({ method: 'DELETE', url: `/feeds/${feedId}`, headers: tenant.headers })
        assert.equal(deleted.statusCode, 204, deleted.body)
        yield body
      },
    })
    const feed = await feedAt(tenant, '/deleted-feed.xml')
    feedId = feed.id
    const started = await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: tenant.headers })
    assert.equal(started.statusCode, 202, started.body)
    const { log, lines } = capturedLog()
    const job = new FeedRunJob({ pollIntervalMs: 50 })
    for (let i = 0; i < 20 && (await job.runOnce(jobContext(t, log))) > 0; i++);
    assert.equal((await t.app.inject({ method: 'GET', url: `/feeds/${feed.id}`, headers: tenant.headers })).statusCode, 404)
    const made = await Promise.all(['gone-1', 'gone-2', 'gone-3'].map((id) => listingByExternalId(t.app, tenant, id)))
    const errors = lines.filter((line) => line.level >= 50).map((line) => `${line.msg}: ${JSON.stringify(line.err ?? '').slice(0, 200)}`)
    assert.deepEqual(
      made.map((listing) => listing?.id ?? null),
      [null, null, null],
      `the deleted feed's run created listings after the DELETE; worker log: ${errors.join(' | ')}`,
    )
  })

  // docs/api.md, PATCH /feeds/{id}: "a new `url` is downloaded whole at the next run". A run of
  // the old address that ends after the PATCH keeps its file's validators only while the feed
  // still reads that address: the new one, answering 304 to the old file's If-None-Match (a
  // CRM's CDN), is asked without it and imported.
  it('stops quietly, logging no unexpected error, when its feed is deleted while an offer is being applied', async () => {
    const agency = await createTenant(t.app, { email: 'delete-mid@agency.example' })
    const jpeg = await photo('jpeg', 120, 90)
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    server.serve('/mid/slow.jpg', {
      contentType: 'image/jpeg',
      body: async function* () {
        await released
        yield jpeg
      },
    })
    server.serve('/mid.xml', { body: feedXml([{ id: 'dm-1', images: [server.url('/mid/slow.jpg')] }, { id: 'dm-2' }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/mid.xml') })
    const started = await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: agency.headers })
    assert.equal(started.statusCode, 202, started.body)
    const { log, lines } = capturedLog()
    const job = new FeedRunJob({ pollIntervalMs: 50 })
    const working = (async () => {
      while ((await job.runOnce(jobContext(t, log))) > 0) {
        // until no run is left to take
      }
    })()
    try {
      await waitFor(() => server.requests.some((request) => request.path === '/mid/slow.jpg'), 30_000, 'the photo to be requested')
      const deleted = await t.app.inject({ method: 'DELETE', url: `/feeds/${feed.id}`, headers: agency.headers })
      assert.equal(deleted.statusCode, 204, deleted.body)
    } finally {
      release()
      await working
    }
    const errors = lines.filter((line) => line.level >= 50)
    assert.deepEqual(
      errors.map(
        (line) =>
          `${line.msg}: ${String((line.err as { message?: string } | undefined)?.message ?? '')
            .split('\n')
            .at(-1)}`,
      ),
      [],
      'the agency’s deletion is no failure of the service',
    )
  })

  it('downloads a new url whole at the next run, even when the PATCH came while a run of the old url was going', async () => {
    const tenant = await agency()
    let feedId = 0
    const old = feedXml(offers(2, 'old-url'))
    server.serve('/old-url.xml', {
      etag: '"same-etag"',
      lastModified: 'Wed, 25 Nov 2026 10:00:00 GMT',
      body: async function* () {
        const patched = await t.app.inject({
          method: 'PATCH',
          url: `/feeds/${feedId}`,
          headers: tenant.headers,
          payload: { url: server.url('/new-url.xml') },
        })
        assert.equal(patched.statusCode, 200, patched.body)
        yield old
      },
    })
    // The new address happens to use the same validators (a CRM's CDN): a conditional GET is a 304.
    server.serve('/new-url.xml', {
      body: feedXml([...offers(2, 'old-url'), ...offers(2, 'new-url')]),
      etag: '"same-etag"',
      lastModified: 'Wed, 25 Nov 2026 10:00:00 GMT',
    })
    const feed = await feedAt(tenant, '/old-url.xml')
    feedId = feed.id
    const first = await runFeedNow(t.app, context(), tenant, feed.id)
    assert.equal(first.status, 'succeeded', JSON.stringify(first))
    const second = await runFeedNow(t.app, context(), tenant, feed.id)
    const asked = server.requests.filter((request) => request.path === '/new-url.xml').map((request) => request.headers)
    assert.equal(asked[0]?.['if-none-match'], undefined, `the first GET of the new url sent If-None-Match ${String(asked[0]?.['if-none-match'])}`)
    assert.equal(second.status, 'succeeded', `the first run of the new url was ${JSON.stringify(second)}`)
    assert.ok(await listingByExternalId(t.app, tenant, 'new-url-1'))
  })

  it('stops a run whose worker is stopping while photos download: the downloads under way end, no other starts, nothing is reported of them', async () => {
    const tenant = await agency()
    // Photo hosts that answer with the first bytes and then say nothing more.
    const silent = new Promise<never>(() => undefined)
    const images = [1, 2, 3, 4].map((n) => `/silent/stop-${n}.jpg`)
    for (const path of images) {
      server.serve(path, {
        contentType: 'image/jpeg',
        body: async function* () {
          yield Buffer.from([0xff, 0xd8, 0xff])
          await silent
        },
      })
    }
    server.serve('/stop-photos.xml', { body: feedXml(images.map((path, n) => ({ id: `stop-${n}`, images: [server.url(path)] }))) })
    const feed = await createFeed(t.app, tenant, { url: server.url('/stop-photos.xml') })
    await t.db.execute(sql`update feeds set next_run_at = now() + interval '1 day' where id = ${feed.id}::int`)
    const started = await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: tenant.headers })
    assert.equal(started.statusCode, 202, started.body)
    let run = await t.app.services.feeds.claimRun('stopping-worker')
    while (run && run.feedId !== feed.id) {
      await t.app.services.feeds.execute(run, 'stopping-worker')
      run = await t.app.services.feeds.claimRun('stopping-worker')
    }
    assert.ok(run, 'the run was claimed')
    const photoRequests = () => server.requests.filter((request) => request.path.startsWith('/silent/')).length
    const stopping = new AbortController()
    const executing = t.app.services.feeds.execute(run, 'stopping-worker', stopping.signal)
    // A run downloads two photos at once: both under way (each started, answered by the server),
    // the other two offers' photos wait their turn. Counted before both arrived, a download
    // started before the stop would arrive after it.
    await waitFor(() => photoRequests() >= 2, 30_000, 'two photo downloads under way')
    const asked = photoRequests()
    const stoppedAt = performance.now()
    stopping.abort()
    await executing
    // Each download would otherwise wait out its 10 s.
    assert.ok(performance.now() - stoppedAt < 8_000, `the run ended ${Math.round(performance.now() - stoppedAt)} ms after the stop`)
    assert.equal(photoRequests(), asked, 'no photo download started after the stop')
    const report = await runReport(t.app, tenant, feed.id, run.id, '?limit=100')
    assert.equal(report.status, 'running', 'the run is left to another worker')
    assert.deepEqual(report.problems.items, [], 'a download the stop cut short is no problem of the photo')
  })
})
