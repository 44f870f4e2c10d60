import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import pino from 'pino'
import { queryRows } from '../../src/db/client.js'
import { feedJobs, FeedRunJob, feedRunRetentionJob } from '../../src/modules/feeds/feed-runs.job.js'
import type { FeedRunSummary } from '../../src/modules/feeds/feeds.schemas.js'
import { createServices } from '../../src/services.js'
import { Worker } from '../../src/worker/worker.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { engine } from '../helpers/database.js'
import { adminHeaders, createTenant, type Tenant } from '../helpers/factories.js'
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js'
import { createFeed, feedXml, runFeedNow, runReport, type TestOffer, listingByExternalId, numberedOffers as offers } from '../helpers/feeds.js'
import { jobContext, runWhileWorkRemains } from '../helpers/jobs.js'
import { runInternalCheck } from '../helpers/moderation.js'
import { photo } from '../helpers/photos.js'
import type { StoredImage } from '../helpers/responses.js'
import { waitFor } from '../helpers/webhooks.js'

describe('feed runs', () => {
  let t: TestApp
  let server: FeedServer

  before(async () => {
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', FEED_POLL_INTERVAL_MS: '50' })
    server = await startFeedServer()
  })
  after(async () => {
    await t.close()
    await server.close()
  })

  const context = () => jobContext(t)

  const byExternalId = (tenant: Tenant, externalId: string) => listingByExternalId(t.app, tenant, externalId)

  async function listingCount(tenant: Tenant): Promise<number> {
    const [row] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from properties where tenant_id = ${tenant.tenantId}::int`)
    return row!.n
  }

  async function finishedEvents(tenant: Tenant): Promise<FeedRunSummary[]> {
    const rows = await queryRows<{ data: FeedRunSummary }>(
      t.db,
      sql`select data from events where type = 'feed.run_finished' and tenant_id = ${tenant.tenantId}::int order by id`,
    )
    return rows.map((row) => row.data)
  }

  it('imports a feed: listings by internal-id, a report, the validators kept, and feed.run_finished', async () => {
    const agency = await createTenant(t.app, { email: 'import@feeds.example' })
    server.serve('/import.xml', { body: feedXml(offers(3, 'imp')), etag: '"imp-1"' })
    const feed = await createFeed(t.app, agency, { url: server.url('/import.xml') })
    const report = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(report.status, 'succeeded', JSON.stringify(report))
    assert.deepEqual(report.counts, { offers: 3, created: 3, updated: 0, unchanged: 0, withdrawn: 0, rejected: 0, errors: 0 })
    assert.ok(report.finished_at !== null && Date.parse(report.finished_at) >= Date.parse(report.started_at))
    assert.equal(report.detail, null)
    assert.deepEqual(report.problems, { items: [], total: 0, limit: 100, offset: 0 })
    const listing = await byExternalId(agency, 'imp-2')
    assert.equal(listing?.price, 5_001_000)
    assert.equal(listing?.status_id, 1)
    assert.equal(await listingCount(agency), 3)

    const [event] = await finishedEvents(agency)
    const { problems: _problems, ...summary } = report
    assert.deepEqual(event, summary)
    const shown = (await t.app.inject({ method: 'GET', url: `/feeds/${feed.id}`, headers: agency.headers })).json<{ last_run: FeedRunSummary }>()
    assert.deepEqual(shown.last_run, summary)
    const [stored] = await queryRows<{ etag: string; content_digest: string }>(t.db, sql`select etag, content_digest from feeds where id = ${feed.id}::int`)
    assert.equal(stored!.etag, '"imp-1"')
    assert.match(stored!.content_digest, /^[0-9a-f]{64}$/)
  })

  it('answers an unchanged feed (304) with a run `unchanged` that touches nothing', async () => {
    const agency = await createTenant(t.app, { email: 'unchanged@feeds.example' })
    server.serve('/unchanged.xml', { body: feedXml(offers(2, 'unc')), etag: '"unc-1"' })
    const feed = await createFeed(t.app, agency, { url: server.url('/unchanged.xml') })
    assert.equal((await runFeedNow(t.app, context(), agency, feed.id)).status, 'succeeded')
    const before = await byExternalId(agency, 'unc-1')
    const again = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(again.status, 'unchanged')
    assert.deepEqual(again.counts, { offers: 0, created: 0, updated: 0, unchanged: 0, withdrawn: 0, rejected: 0, errors: 0 })
    assert.equal(server.requests.at(-1)!.headers['if-none-match'], '"unc-1"')
    assert.deepEqual(await byExternalId(agency, 'unc-1'), before)
    assert.deepEqual(
      (await finishedEvents(agency)).map((run) => run.status),
      ['succeeded', 'unchanged'],
    )
  })

  it('fails a broken, cut-off or foreign file as a whole, saying why, and changes nothing', async () => {
    const agency = await createTenant(t.app, { email: 'broken@feeds.example' })
    const good = feedXml(offers(4, 'brk'))
    server.serve('/broken.xml', { body: good })
    const feed = await createFeed(t.app, agency, { url: server.url('/broken.xml') })
    assert.equal((await runFeedNow(t.app, context(), agency, feed.id)).status, 'succeeded')
    const before = await Promise.all(['brk-1', 'brk-2', 'brk-3', 'brk-4'].map((id) => byExternalId(agency, id)))

    // The first offers changed, then the XML breaks: nothing of it may be applied.
    const changedThenBroken = feedXml(offers(4, 'brk', { price: 1_000_000 })).replace(
      '<offer internal-id="brk-3">',
      '<offer internal-id="brk-3"><oops></offer>',
    )
    const cases: [string, Parameters<FeedServer['serve']>[1], RegExp][] = [
      ['not_xml', { body: 'this is not xml at all' }, /.+/],
      ['wrong_root', { body: '<?xml version="1.0"?><yml_catalog><shop/></yml_catalog>' }, /.+/],
      ['truncated', { body: good.slice(0, Math.floor(good.length * 0.6)) }, /.+/],
      ['not_xml', { body: changedThenBroken }, /.+/],
      ['http_status', { body: 'down', status: 503 }, /HTTP 503/],
    ]
    for (const [code, file, detail] of cases) {
      server.serve('/broken.xml', file)
      const report = await runFeedNow(t.app, context(), agency, feed.id)
      assert.equal(report.status, 'failed', `${code}: ${JSON.stringify(report)}`)
      assert.ok(report.failure_code === code || (code === 'not_xml' && report.failure_code === 'truncated'), `${code}: got ${report.failure_code}`)
      assert.match(report.detail ?? '', detail)
      assert.deepEqual(report.counts, { offers: 0, created: 0, updated: 0, unchanged: 0, withdrawn: 0, rejected: 0, errors: 0 })
    }
    assert.deepEqual(await Promise.all(['brk-1', 'brk-2', 'brk-3', 'brk-4'].map((id) => byExternalId(agency, id))), before)
    assert.equal(await listingCount(agency), 4)
  })

  it('reports refused offers one by one: partially_succeeded, the others imported', async () => {
    const agency = await createTenant(t.app, { email: 'refused@feeds.example' })
    const file = feedXml([
      { id: 'ok-1' },
      { id: 'no-price', price: null },
      { id: 'garage', category: 'гараж' },
      { id: 'nowhere', locality: 'Урюпинск-на-Марсе' },
      { id: 'dollars', currency: 'USD' },
      { id: 'ok-1', price: 1 },
      { id: 'ok-2', category: 'flat', type: 'sale' },
    ])
    server.serve('/refused.xml', { body: file })
    const feed = await createFeed(t.app, agency, { url: server.url('/refused.xml') })
    const report = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(report.status, 'partially_succeeded')
    assert.equal(report.counts.offers, 7)
    assert.equal(report.counts.created, 2)
    assert.equal(report.counts.rejected, 5)
    const codes = report.problems.items.map((problem) => [problem.internal_id, problem.code])
    for (const expected of [
      ['no-price', 'missing_price'],
      ['garage', 'unknown_category'],
      ['nowhere', 'unknown_locality'],
      ['dollars', 'unsupported_currency'],
      ['ok-1', 'duplicate_internal_id'],
    ]) {
      assert.ok(
        codes.some(([id, code]) => id === expected[0] && code === expected[1]),
        `${expected.join(' ')} in ${JSON.stringify(codes)}`,
      )
    }
    for (const problem of report.problems.items) assert.match(problem.message, /[а-яё]/i, 'messages are in Russian')
    assert.equal(report.problems.total, report.problems.items.length)
    const paged = await runReport(t.app, agency, feed.id, report.id, '?limit=2&offset=1')
    assert.deepEqual(paged.problems.items, report.problems.items.slice(1, 3))
    assert.equal((await byExternalId(agency, 'ok-1'))?.price, 8_500_000, 'the first of two offers with one id is taken')
    assert.equal(await byExternalId(agency, 'garage'), undefined)
  })

  it('updates changed offers, leaves unchanged ones alone, withdraws removed ones and resubmits them when they return', async () => {
    const agency = await createTenant(t.app, { email: 'lifecycle@feeds.example' })
    const stock = offers(4, 'life')
    server.serve('/life.xml', { body: feedXml(stock) })
    const feed = await createFeed(t.app, agency, { url: server.url('/life.xml') })
    await runFeedNow(t.app, context(), agency, feed.id)
    await runInternalCheck(t.app)
    assert.equal((await byExternalId(agency, 'life-4'))?.status_id, 2)
    const untouched = await byExternalId(agency, 'life-2')

    // life-1 changes its price, life-4 leaves the file.
    server.serve('/life.xml', { body: feedXml([{ ...stock[0]!, price: 4_200_000 }, stock[1]!, stock[2]!]) })
    const second = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(second.status, 'succeeded', JSON.stringify(second))
    assert.deepEqual(second.counts, { offers: 3, created: 0, updated: 1, unchanged: 2, withdrawn: 1, rejected: 0, errors: 0 })
    assert.deepEqual(await byExternalId(agency, 'life-2'), untouched)
    assert.equal((await byExternalId(agency, 'life-4'))?.status_id, 4)
    const changed = await byExternalId(agency, 'life-1')
    assert.equal(changed?.status_id, 2, 'a published listing stays published while its change is checked')

    server.serve('/life.xml', { body: feedXml(stock) })
    const third = await runFeedNow(t.app, context(), agency, feed.id)
    assert.deepEqual(third.counts, { offers: 4, created: 0, updated: 2, unchanged: 2, withdrawn: 0, rejected: 0, errors: 0 })
    assert.equal((await byExternalId(agency, 'life-4'))?.status_id, 1, 'back for the internal check')
    await runInternalCheck(t.app)
    assert.equal((await byExternalId(agency, 'life-4'))?.status_id, 2)
  })

  it('withdraws a listing whose offer left the file before the check decided it, so it is never published', async () => {
    const agency = await createTenant(t.app, { email: 'early@feeds.example' })
    const stock = offers(3, 'early')
    server.serve('/early.xml', { body: feedXml(stock) })
    const feed = await createFeed(t.app, agency, { url: server.url('/early.xml') })
    await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal((await byExternalId(agency, 'early-3'))?.status_id, 1)

    server.serve('/early.xml', { body: feedXml(stock.slice(0, 2)) })
    const second = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(second.counts.withdrawn, 1, JSON.stringify(second))
    assert.equal((await byExternalId(agency, 'early-3'))?.status_id, 4)
    await runInternalCheck(t.app)
    assert.equal((await byExternalId(agency, 'early-3'))?.status_id, 4, 'the check does not publish a listing whose offer is gone')
    assert.equal((await byExternalId(agency, 'early-1'))?.status_id, 2)
  })

  it('reports the internal check’s findings on the listings a run submitted, once the check has rejected them', async () => {
    const agency = await createTenant(t.app, { email: 'checked@feeds.example' })
    const stock: TestOffer[] = [
      { id: 'chk-1', price: 5_000_000 },
      { id: 'chk-2', price: 5_100_000, floor: 12, floorsTotal: 9 },
      { id: 'chk-3', price: 5_200_000, description: 'Звоните: +7 912 345-67-89' },
    ]
    server.serve('/checked.xml', { body: feedXml(stock) })
    const feed = await createFeed(t.app, agency, { url: server.url('/checked.xml') })
    const first = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(first.problems.total, 0, 'the check has not run yet')
    await runInternalCheck(t.app)
    const checked = await runReport(t.app, agency, feed.id, first.id, '?limit=100')
    const codes = (report: typeof checked) => report.problems.items.map((problem) => `${problem.internal_id}:${problem.code}`)
    assert.deepEqual(codes(checked).sort(), ['chk-2:floor_above_total_floors', 'chk-3:contacts_in_description'])
    assert.equal(checked.problems.total, 2)

    // A change of the published chk-1 that the check rejects: its revision's findings go with the run that sent it.
    server.serve('/checked.xml', { body: feedXml([{ ...stock[0]!, floor: 30, floorsTotal: 9 }, stock[1]!, stock[2]!]) })
    const second = await runFeedNow(t.app, context(), agency, feed.id)
    await runInternalCheck(t.app)
    assert.equal((await byExternalId(agency, 'chk-1'))?.revision?.status, 'rejected')
    assert.deepEqual(codes(await runReport(t.app, agency, feed.id, second.id, '?limit=100')), ['chk-1:floor_above_total_floors'])
    assert.deepEqual(codes(await runReport(t.app, agency, feed.id, first.id, '?limit=100')).sort(), [
      'chk-2:floor_above_total_floors',
      'chk-3:contacts_in_description',
    ])
  })

  it('refuses to withdraw more than half of the feed’s listings unless the feed allows it', async () => {
    const agency = await createTenant(t.app, { email: 'mass@feeds.example' })
    const stock = offers(4, 'mass')
    server.serve('/mass.xml', { body: feedXml(stock) })
    const feed = await createFeed(t.app, agency, { url: server.url('/mass.xml') })
    await runFeedNow(t.app, context(), agency, feed.id)
    await runInternalCheck(t.app)

    server.serve('/mass.xml', { body: feedXml([stock[0]!]) })
    const refused = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(refused.status, 'failed')
    assert.equal(refused.failure_code, 'mass_withdrawal_refused')
    assert.match(refused.detail!, /withdraw 3 of the feed’s 4 listings/)
    assert.match(refused.detail!, /allow_mass_withdrawal/)
    for (const offer of stock) assert.equal((await byExternalId(agency, offer.id))?.status_id, 2, offer.id)

    const empty = feedXml([])
    server.serve('/mass.xml', { body: empty })
    assert.equal((await runFeedNow(t.app, context(), agency, feed.id)).failure_code, 'mass_withdrawal_refused', 'an empty file withdraws nothing')

    const patched = await t.app.inject({ method: 'PATCH', url: `/feeds/${feed.id}`, headers: agency.headers, payload: { allow_mass_withdrawal: true } })
    assert.equal(patched.statusCode, 200)
    server.serve('/mass.xml', { body: feedXml([stock[0]!]) })
    const allowed = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(allowed.status, 'succeeded')
    assert.equal(allowed.counts.withdrawn, 3)
    assert.equal((await byExternalId(agency, 'mass-2'))?.status_id, 4)
  })

  /** Where a listing's photos came from (their `source_url`), in their order. */
  const sourcesOfPhotos = async (agency: Tenant, listingId: number) => {
    const response = await t.app.inject({ method: 'GET', url: `/property-images?property_id=${listingId}`, headers: agency.headers })
    assert.equal(response.statusCode, 200, response.body)
    return response
      .json<StoredImage[]>()
      .sort((x, y) => x.sort_order - y.sort_order)
      .map((image) => image.source_url)
  }

  it('downloads photos in the feed’s order, only those not attached yet, and follows reorders and removals', async () => {
    const agency = await createTenant(t.app, { email: 'photos@feeds.example' })
    const [red, green, blue] = await Promise.all([photo('jpeg', 320, 240), photo('png', 300, 200), photo('webp', 200, 300)])
    server.serve('/img/a.jpg', { body: red, contentType: 'image/jpeg' })
    server.serve('/img/b.png', { body: green, contentType: 'image/png' })
    server.serve('/img/c.webp', { body: blue, contentType: 'image/webp' })
    const [a, b, c, missing] = ['/img/a.jpg', '/img/b.png', '/img/c.webp', '/img/missing.jpg'].map((path) => server.url(path))
    server.serve('/photos.xml', { body: feedXml([{ id: 'ph-1', images: [a!, b!] }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/photos.xml') })
    assert.equal((await runFeedNow(t.app, context(), agency, feed.id)).status, 'succeeded')

    const photos = async () => sourcesOfPhotos(agency, (await byExternalId(agency, 'ph-1'))!.id)
    assert.deepEqual(await photos(), [a, b])

    const downloadsBefore = server.requests.filter((request) => request.path.startsWith('/img/')).length
    server.serve('/photos.xml', { body: feedXml([{ id: 'ph-1', images: [c!, a!, missing!] }]) })
    const second = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(second.status, 'partially_succeeded')
    assert.equal(second.counts.errors, 1)
    assert.deepEqual(
      second.problems.items.map((problem) => [problem.internal_id, problem.code]),
      [['ph-1', 'image_download_failed']],
    )
    assert.deepEqual(await photos(), [c, a])
    const downloads = server.requests.filter((request) => request.path.startsWith('/img/')).slice(downloadsBefore)
    assert.deepEqual(downloads.map((request) => request.path).sort(), ['/img/c.webp', '/img/missing.jpg'], 'only photos not attached are downloaded')

    // The photo that failed is tried again at the next run, though the offer did not change.
    server.serve('/img/missing.jpg', { body: red, contentType: 'image/jpeg' })
    server.serve('/photos.xml', { body: `${feedXml([{ id: 'ph-1', images: [c!, a!, missing!] }])}\n` })
    const third = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(third.status, 'succeeded', JSON.stringify(third))
    assert.deepEqual(await photos(), [c, a, missing])
  })

  it('says in Russian why a photo was not taken: the code its server answered, a web page for a photo', async () => {
    const agency = await createTenant(t.app, { email: 'photo-words@feeds.example' })
    server.serve('/words-img/page.jpg', { body: '<!doctype html><html><body>Нет фото</body></html>', contentType: 'image/jpeg' })
    const [page, missing] = ['/words-img/page.jpg', '/words-img/missing.jpg'].map((path) => server.url(path))
    server.serve('/photo-words.xml', { body: feedXml([{ id: 'pw-1', images: [page!, missing!] }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/photo-words.xml') })
    const report = await runFeedNow(t.app, context(), agency, feed.id)
    assert.deepEqual(
      report.problems.items.map((problem) => [problem.code, problem.message]),
      [
        ['image_download_failed', `Фото ${page} не загружено: по адресу веб-страница, а не фото JPEG, PNG или WebP`],
        ['image_download_failed', `Фото ${missing} не загружено: сервер фото ответил кодом 404 вместо фото`],
      ],
    )
  })

  it('leaves the photos of a listing the agency closed as they are, and the run goes on, when its offer drops or moves a photo', async () => {
    const agency = await createTenant(t.app, { email: 'closed-photos@feeds.example' })
    const [red, green] = await Promise.all([photo('jpeg', 320, 240), photo('png', 300, 200)])
    server.serve('/closed-img/a.jpg', { body: red, contentType: 'image/jpeg' })
    server.serve('/closed-img/b.png', { body: green, contentType: 'image/png' })
    const [a, b] = ['/closed-img/a.jpg', '/closed-img/b.png'].map((path) => server.url(path))
    server.serve('/closed-photos.xml', { body: feedXml([{ id: 'cl-1', images: [a!, b!] }, { id: 'cl-2' }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/closed-photos.xml') })
    assert.equal((await runFeedNow(t.app, context(), agency, feed.id)).status, 'succeeded')
    await runInternalCheck(t.app)
    const listing = await byExternalId(agency, 'cl-1')
    assert.equal(listing?.status_id, 2)
    const closing = await t.app.inject({ method: 'POST', url: `/properties/${listing.id}/status`, headers: agency.headers, payload: { status_id: 5 } })
    assert.equal(closing.statusCode, 200, closing.body)
    const photos = () => sourcesOfPhotos(agency, listing.id)
    assert.deepEqual(await photos(), [a, b])

    // The offer of the closed listing drops its first photo (the second moves up); its fields
    // are as they were, and cl-2 changes its price.
    server.serve('/closed-photos.xml', {
      body: feedXml([
        { id: 'cl-1', images: [b!] },
        { id: 'cl-2', price: 9_000_000 },
      ]),
    })
    const report = await runFeedNow(t.app, context(), agency, feed.id)
    assert.notEqual(report.status, 'failed', JSON.stringify(report))
    assert.equal(report.failure_code, null, JSON.stringify(report))
    assert.deepEqual(await photos(), [a, b], 'a closed listing keeps its photos')
    assert.equal((await byExternalId(agency, 'cl-1'))?.status_id, 5)
    assert.deepEqual(
      report.problems.items.map((problem) => [problem.internal_id, problem.code]),
      [['cl-1', 'listing_conflict']],
    )
    assert.equal(report.counts.updated, 1, 'cl-2, its new price')

    // A photo added to the offer is refused the same way, not as a failed download.
    server.serve('/closed-photos.xml', {
      body: feedXml([
        { id: 'cl-1', images: [a!, b!, server.url('/closed-img/c.jpg')] },
        { id: 'cl-2', price: 9_000_000 },
      ]),
    })
    server.serve('/closed-img/c.jpg', { body: red, contentType: 'image/jpeg' })
    const added = await runFeedNow(t.app, context(), agency, feed.id)
    assert.deepEqual(
      added.problems.items.map((problem) => [problem.internal_id, problem.code]),
      [['cl-1', 'listing_conflict']],
    )
    assert.deepEqual(await photos(), [a, b])
  })

  it('schedules due feeds once, and never beside a run under way', async () => {
    const agency = await createTenant(t.app, { email: 'schedule@feeds.example' })
    server.serve('/scheduled.xml', { body: feedXml(offers(1, 'sch')) })
    const feed = await createFeed(t.app, agency, { url: server.url('/scheduled.xml'), schedule: 15 })
    const scheduledRuns = async () =>
      (await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from feed_runs where feed_id = ${feed.id}::int and trigger = 'schedule'`))[0]!.n
    await t.app.services.feeds.scheduleDueRuns()
    assert.equal(await scheduledRuns(), 1)
    const [due] = await queryRows<{ minutes: number }>(
      t.db,
      sql`select extract(epoch from next_run_at - now())::float8 / 60 as minutes from feeds where id = ${feed.id}::int`,
    )
    assert.ok(due!.minutes > 14 && due!.minutes <= 15, `next run in ${due!.minutes} minutes`)
    await t.app.services.feeds.scheduleDueRuns()
    assert.equal(await scheduledRuns(), 1, 'not due again')

    // Due again while its run is still under way: no second run.
    await t.db.execute(sql`update feeds set next_run_at = now() - interval '1 minute' where id = ${feed.id}::int`)
    await t.app.services.feeds.scheduleDueRuns()
    assert.equal(await scheduledRuns(), 1)
    const manual = await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: agency.headers })
    assert.equal(manual.statusCode, 409)
  })

  it('starts no run for a suspended agency’s feed, and moves it a schedule ahead all the same', async () => {
    const agency = await createTenant(t.app, { email: 'suspended@feeds.example' })
    const feed = await createFeed(t.app, agency, { url: server.url('/scheduled.xml') })
    const suspended = await t.app.inject({ method: 'POST', url: `/admin/tenants/${agency.tenantId}/suspend`, headers: adminHeaders })
    assert.equal(suspended.statusCode, 200, suspended.body)
    await t.app.services.feeds.scheduleDueRuns()
    const [row] = await queryRows<{ runs: number; due_in_minutes: number }>(
      t.db,
      sql`select (select count(*)::int from feed_runs where feed_id = ${feed.id}::int) as runs,
                 extract(epoch from next_run_at - now())::float8 / 60 as due_in_minutes
          from feeds where id = ${feed.id}::int`,
    )
    assert.equal(row!.runs, 0)
    assert.ok(row!.due_in_minutes > 59, `next run in ${row!.due_in_minutes} minutes`)
  })

  it('forgets runs past FEED_RUN_RETENTION_DAYS with their problems, keeping each feed’s newest', async () => {
    const agency = await createTenant(t.app, { email: 'retention@feeds.example' })
    server.serve('/retention.xml', { body: feedXml([{ id: 'ret-1', price: null }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/retention.xml') })
    const old = await runFeedNow(t.app, context(), agency, feed.id)
    server.serve('/retention.xml', {
      body: feedXml([
        { id: 'ret-1', price: null },
        { id: 'ret-2', price: null },
      ]),
    })
    const newest = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(old.problems.total, 1)
    // A run of a large feed holds a problem per offer: 2,500 more here.
    await t.db.execute(sql`insert into feed_run_problems (run_id, seq, internal_id, code, field, message)
        select ${old.id}::int, 10 + n, 'offer-' || n, 'price_missing', 'price', 'The offer has no price.' from generate_series(1, 2500) n`)
    // Both finished long ago: the older goes, the newest stays as the feed's last run.
    await t.db.execute(sql`update feed_runs set finished_at = now() - interval '31 days' where feed_id = ${feed.id}::int`)
    // At most 1,000 rows a statement, as every retention delete (docs/operations.md#retention):
    // the problems first, then the run.
    assert.deepEqual(await runWhileWorkRemains(feedRunRetentionJob, context()), [1000, 1000, 501, 1])
    const runs = (await t.app.inject({ method: 'GET', url: `/feeds/${feed.id}/runs`, headers: agency.headers })).json<{ items: FeedRunSummary[] }>()
    assert.deepEqual(
      runs.items.map((run) => run.id),
      [newest.id],
    )
    const [left] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from feed_run_problems where run_id = ${old.id}::int`)
    assert.equal(left!.n, 0)
    assert.equal((await runReport(t.app, agency, feed.id, newest.id)).problems.total, 2)
  })

  it('lets one worker at a time run a feed: two racing workers, and a run whose worker died is taken over', async () => {
    const agency = await createTenant(t.app, { email: 'race@feeds.example' })
    // Runs of the other tests' feeds are finished first, so what follows is about this feed only.
    await runWhileWorkRemains(new FeedRunJob({ pollIntervalMs: 20 }), context())
    server.serve('/race.xml', { body: feedXml(offers(30, 'race')) })
    const feed = await createFeed(t.app, agency, { url: server.url('/race.xml') })
    // Two workers of their own (services, leases), as two processes would have.
    const workers = [0, 1].map(() => {
      const services = createServices({ config: t.config, database: t.database.handle })
      const worker = new Worker({ services, config: t.config, log: pino({ level: 'silent' }) }, feedJobs({ pollIntervalMs: 20 }))
      return { services, worker }
    })
    for (const { worker } of workers) worker.start()
    try {
      await waitFor(async () => (await finishedEvents(agency)).length === 1, 60_000, 'the scheduled run to finish')
      const runs = await queryRows<{ status: string; created: number }>(t.db, sql`select status, created from feed_runs where feed_id = ${feed.id}::int`)
      assert.deepEqual(runs, [{ status: 'succeeded', created: 30 }])
      assert.equal(await listingCount(agency), 30)
    } finally {
      for (const { worker, services } of workers) {
        await worker.stop()
        await services.close()
      }
    }

    await runWhileWorkRemains(new FeedRunJob({ pollIntervalMs: 20 }), context())
    // A worker claimed the next run and died: its lease lapses, and another finishes the run.
    server.serve('/race.xml', { body: feedXml(offers(31, 'race')) })
    const started = await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: agency.headers })
    const run = started.json<FeedRunSummary>()
    const claimed = await t.app.services.feeds.claimRun('a-worker-that-dies')
    assert.equal(claimed?.id, run.id)
    const job = new FeedRunJob({ pollIntervalMs: 20 })
    assert.equal(await job.runOnce(context()), 0, 'a held lease is left alone')
    await t.db.execute(sql`update feed_runs set lease_expires_at = now() - interval '1 second' where id = ${run.id}::int`)
    assert.equal(await job.runOnce(context()), 1)
    const report = await runReport(t.app, agency, feed.id, run.id)
    assert.equal(report.status, 'succeeded')
    assert.deepEqual(report.counts, { offers: 31, created: 1, updated: 0, unchanged: 30, withdrawn: 0, rejected: 0, errors: 0 })
  })

  it('counts what a worker applied but had not recorded when it lost the run as created and updated, not unchanged', async () => {
    const agency = await createTenant(t.app, { email: 'unrecorded@feeds.example' })
    const stock = offers(3, 'unr')
    server.serve('/unrecorded.xml', { body: feedXml(stock) })
    const feed = await createFeed(t.app, agency, { url: server.url('/unrecorded.xml') })
    await t.db.execute(sql`update feeds set next_run_at = now() + interval '1 day' where id = ${feed.id}::int`)
    await runFeedNow(t.app, context(), agency, feed.id)
    // The next file reprices unr-1 and adds unr-4.
    server.serve('/unrecorded.xml', { body: feedXml([{ ...stock[0]!, price: 9_900_000 }, stock[1]!, stock[2]!, ...offers(4, 'unr').slice(3)]) })
    const [remembered] = await queryRows<{ digest: string; run: number; file: string }>(
      t.db,
      sql`select o.content_digest as digest, o.last_run_id as run, f.content_digest as file
            from feed_offers o join feeds f on f.id = o.feed_id where o.feed_id = ${feed.id}::int and o.internal_id = 'unr-1'`,
    )
    const run = await runFeedNow(t.app, context(), agency, feed.id)
    const counted = { offers: 4, created: 1, updated: 1, unchanged: 2, withdrawn: 0, rejected: 0, errors: 0 }
    assert.deepEqual(run.counts, counted)

    // As if its worker had applied those two offers and died before it recorded them (it records
    // a batch at a time): the feed remembers them, and its file, as before the run, and the run
    // is under way with its lease lapsed. The worker that takes it over starts it again.
    await t.db.execute(sql`update feeds set content_digest = ${remembered!.file}, etag = null, last_modified = null where id = ${feed.id}::int`)
    await t.db.execute(sql`delete from feed_offers where feed_id = ${feed.id}::int and internal_id = 'unr-4'`)
    await t.db.execute(
      sql`update feed_offers set content_digest = ${remembered!.digest}, last_run_id = ${remembered!.run}::int where feed_id = ${feed.id}::int and internal_id = 'unr-1'`,
    )
    await t.db.execute(
      sql`update feed_runs set status = 'running', finished_at = null, offers = 0, created = 0, updated = 0, unchanged = 0,
            lease_owner = 'a-worker-that-died', lease_expires_at = now() - interval '1 second'
          where id = ${run.id}::int`,
    )
    assert.equal(await new FeedRunJob({ pollIntervalMs: 20 }).runOnce(context()), 1)
    const report = await runReport(t.app, agency, feed.id, run.id)
    assert.equal(report.status, 'succeeded')
    assert.deepEqual(report.counts, counted)
  })

  it('counts an offer whose photo still fails as unchanged, though the check published its listing while the run went on', async () => {
    const agency = await createTenant(t.app, { email: 'photo-retry-count@feeds.example' })
    server.serve('/photo-retry.xml', { body: feedXml([{ id: 'pr-1', images: [server.url('/missing/pr-1.jpg')] }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/photo-retry.xml') })
    await t.db.execute(sql`update feeds set next_run_at = now() + interval '1 day' where id = ${feed.id}::int`)
    assert.equal((await runFeedNow(t.app, context(), agency, feed.id)).counts.created, 1)
    // The next run is started, and before a worker takes it the check publishes the listing.
    const started = await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: agency.headers })
    assert.equal(started.statusCode, 202, started.body)
    await runInternalCheck(t.app)
    const published = await byExternalId(agency, 'pr-1')
    assert.equal(published?.status_id, 2)
    assert.equal(await new FeedRunJob({ pollIntervalMs: 20 }).runOnce(context()), 1)
    const report = await runReport(t.app, agency, feed.id, started.json<FeedRunSummary>().id)
    assert.deepEqual(report.counts, { offers: 1, created: 0, updated: 0, unchanged: 1, withdrawn: 0, rejected: 0, errors: 1 })
    assert.equal((await byExternalId(agency, 'pr-1'))?.updated_at, published?.updated_at, 'the run did not touch the listing')
  })

  it(
    'wakes an idle worker at once for a run started by hand (PostgreSQL notices)',
    { skip: engine === 'pglite' && 'PGlite has no notices from other sessions: workers poll' },
    async () => {
      const agency = await createTenant(t.app, { email: 'notice@feeds.example' })
      server.serve('/notice.xml', { body: feedXml(offers(1, 'ntc')) })
      const feed = await createFeed(t.app, agency, { url: server.url('/notice.xml') })
      await t.db.execute(sql`update feeds set next_run_at = now() + interval '1 day' where id = ${feed.id}::int`)
      await runWhileWorkRemains(new FeedRunJob({ pollIntervalMs: 20 }), context())
      const services = createServices({ config: t.config, database: t.database.handle })
      const worker = new Worker({ services, config: t.config, log: pino({ level: 'silent' }) }, feedJobs({ pollIntervalMs: 3_600_000 }), t.database.handle)
      worker.start()
      try {
        // Once it listens, a run started now reaches it as a notice; its hourly poll would come far too late.
        await waitFor(
          async () =>
            (
              await queryRows<{ n: number }>(
                t.db,
                sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and query ilike ${'%listen%mls_feed_runs%'}`,
              )
            )[0]!.n > 0,
          30_000,
          'the worker to listen',
        )
        const started = await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: agency.headers })
        const run = started.json<FeedRunSummary>()
        await waitFor(async () => (await runReport(t.app, agency, feed.id, run.id)).status !== 'running', 30_000, 'the run to end')
        assert.equal((await runReport(t.app, agency, feed.id, run.id)).status, 'succeeded')
      } finally {
        await worker.stop()
        await services.close()
      }
    },
  )
})
