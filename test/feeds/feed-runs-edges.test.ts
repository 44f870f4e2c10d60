/**
 * Feed runs where the stock, the files and the workers meet their edges: listings the agency closed,
 * two feeds with one id, photos changed or failed, a file refused in part and read again, runs taken
 * over or stopped mid-download, a suspension landing during a run, and reports past 2^31.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { FeedRunJob } from '../../src/modules/feeds/feed-runs.job.js'
import type { FeedRunSummary } from '../../src/modules/feeds/feeds.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { adminHeaders, createTenant, propertyBody, type Tenant } from '../helpers/factories.js'
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js'
import { createFeed, feedXml, runFeedNow, runReport, type TestOffer, listingByExternalId, numberedOffers as offers } from '../helpers/feeds.js'
import { jobContext } from '../helpers/jobs.js'
import { runInternalCheck } from '../helpers/moderation.js'
import { photo } from '../helpers/photos.js'
import { waitFor } from '../helpers/webhooks.js'

describe('feed runs at their edges', () => {
  let t: TestApp
  let server: FeedServer

  before(async () => {
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', FEED_POLL_INTERVAL_MS: '50', IMAGE_MAX_PER_PROPERTY: '2' })
    server = await startFeedServer()
  })
  after(async () => {
    await t.close()
    await server.close()
  })

  const context = () => jobContext(t)

  const byExternalId = (tenant: Tenant, externalId: string) => listingByExternalId(t.app, tenant, externalId)

  async function setStatus(tenant: Tenant, id: number, statusId: number): Promise<void> {
    const response = await t.app.inject({ method: 'POST', url: `/properties/${id}/status`, headers: tenant.headers, payload: { status_id: statusId } })
    assert.equal(response.statusCode, 200, response.body)
  }

  it('closed deals whose offers left the file do not count against the mass-withdrawal guard forever', async () => {
    const agency = await createTenant(t.app, { email: 'closed-guard@agency.example' })
    const stock = offers(4, 'cg')
    server.serve('/closed-guard.xml', { body: feedXml(stock) })
    const feed = await createFeed(t.app, agency, { url: server.url('/closed-guard.xml') })
    await runFeedNow(t.app, context(), agency, feed.id)
    await runInternalCheck(t.app)
    // The agency closes the deals on cg-1 and cg-2; its CRM drops them from the export.
    for (const id of ['cg-1', 'cg-2']) await setStatus(agency, (await byExternalId(agency, id))!.id, 5)
    server.serve('/closed-guard.xml', { body: feedXml([stock[2]!, stock[3]!]) })
    const second = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(second.status, 'succeeded', JSON.stringify(second))

    // Later cg-4 is sold elsewhere and leaves the file: one of the two live listings.
    server.serve('/closed-guard.xml', { body: feedXml([stock[2]!]) })
    const third = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(third.status, 'succeeded', `one of two live listings leaves, yet: ${third.failure_code} ${third.detail}`)
    assert.equal(third.counts.withdrawn, 1)
    assert.equal((await byExternalId(agency, 'cg-4'))?.status_id, 4)
  })

  it('keeps live an offer that one feed of the agency dropped while another feed of the agency still exports its internal-id', async () => {
    const agency = await createTenant(t.app, { email: 'two-feeds@agency.example' })
    server.serve('/office-a.xml', { body: feedXml([{ id: 'X-1', price: 5_000_000 }, { id: 'A-2' }, { id: 'A-3' }]) })
    server.serve('/office-b.xml', { body: feedXml([{ id: 'X-1', price: 7_000_000, address: 'ул. Арбат, д. 1' }, { id: 'B-2' }]) })
    const feedA = await createFeed(t.app, agency, { url: server.url('/office-a.xml') })
    const feedB = await createFeed(t.app, agency, { url: server.url('/office-b.xml') })
    await runFeedNow(t.app, context(), agency, feedA.id)
    const taken = await runFeedNow(t.app, context(), agency, feedB.id)
    assert.deepEqual(
      taken.problems.items.map((problem) => `${problem.internal_id}:${problem.code}`),
      ['X-1:internal_id_moved'],
    )
    assert.equal(taken.counts.errors, 1)
    // One listing for X-1, feed B's now: 4 listings for the 5 offers.
    const [row] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from properties where tenant_id = ${agency.tenantId}::int`)
    assert.equal(row!.n, 4)

    // Office A drops X-1; office B still exports it (its next file adds B-3, so the run is not `unchanged`).
    server.serve('/office-a.xml', { body: feedXml([{ id: 'A-2' }, { id: 'A-3' }]) })
    await runFeedNow(t.app, context(), agency, feedA.id)
    server.serve('/office-b.xml', { body: feedXml([{ id: 'X-1', price: 7_000_000, address: 'ул. Арбат, д. 1' }, { id: 'B-2' }, { id: 'B-3' }]) })
    await runFeedNow(t.app, context(), agency, feedB.id)
    assert.notEqual((await byExternalId(agency, 'X-1'))?.status_id, 4, 'an offer still in feed B’s file is withdrawn and never comes back')
  })

  it('imports two feeds of one agency one after the other, never at once: the feed that applied an offer last keeps it', async () => {
    const agency = await createTenant(t.app, { email: 'feeds-in-turn@agency.example' })
    server.serve('/turn-a.xml', { body: feedXml([{ id: 'T-1', price: 5_000_000 }, { id: 'TA-2' }]) })
    server.serve('/turn-b.xml', { body: feedXml([{ id: 'T-1', price: 6_000_000 }, { id: 'TB-2' }]) })
    const feeds = [await createFeed(t.app, agency, { url: server.url('/turn-a.xml') }), await createFeed(t.app, agency, { url: server.url('/turn-b.xml') })]
    for (const feed of feeds) {
      await t.db.execute(sql`update feeds set next_run_at = now() + interval '1 day' where id = ${feed.id}::int`)
      assert.equal((await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: agency.headers })).statusCode, 202)
    }
    // A worker's next run of this agency; other agencies' runs it meets are run as they come.
    const claim = async (owner: string) => {
      let run = await t.app.services.feeds.claimRun(owner)
      while (run && run.tenantId !== agency.tenantId) {
        await t.app.services.feeds.execute(run, owner)
        run = await t.app.services.feeds.claimRun(owner)
      }
      return run
    }
    const first = await claim('turn-worker-1')
    assert.ok(first)
    assert.equal(await claim('turn-worker-2'), undefined, 'a second worker took the agency’s other feed while the first was importing')
    await t.app.services.feeds.execute(first, 'turn-worker-1')
    const second = await claim('turn-worker-2')
    assert.ok(second)
    assert.notEqual(second.feedId, first.feedId)
    await t.app.services.feeds.execute(second, 'turn-worker-2')
    // One listing for T-1, as the second feed left it, and remembered by that feed alone.
    assert.equal(Number((await byExternalId(agency, 'T-1'))?.price), second.feedId === feeds[0]!.id ? 5_000_000 : 6_000_000)
    const owners = await queryRows<{ feed_id: number }>(t.db, sql`select feed_id from feed_offers where internal_id = 'T-1'`)
    assert.deepEqual(
      owners.map((row) => row.feed_id),
      [second.feedId],
    )
  })

  it('leaves alone a photo the agency added by URL to a listing of the feed when the offer changes', async () => {
    const agency = await createTenant(t.app, { email: 'own-url-photo@agency.example' })
    server.serve('/own/feed-photo.jpg', { body: await photo('jpeg', 120, 90), contentType: 'image/jpeg' })
    server.serve('/own/agency-photo.jpg', { body: await photo('jpeg', 100, 80), contentType: 'image/jpeg' })
    server.serve('/own-photo.xml', { body: feedXml([{ id: 'op-1', price: 5_000_000, images: [server.url('/own/feed-photo.jpg')] }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/own-photo.xml') })
    assert.equal((await runFeedNow(t.app, context(), agency, feed.id)).counts.created, 1)
    const listing = (await listingByExternalId(t.app, agency, 'op-1'))!

    // The agency adds a photo of its own, by URL, as api.md allows ("treats it as an upload").
    const added = await t.app.inject({
      method: 'POST',
      url: '/property-images',
      headers: agency.headers,
      payload: { property_id: listing.id, url: server.url('/own/agency-photo.jpg'), sort_order: 5 },
    })
    assert.equal(added.statusCode, 201, added.body)

    // The CRM changes the price: the offer is applied again.
    server.serve('/own-photo.xml', { body: feedXml([{ id: 'op-1', price: 5_100_000, images: [server.url('/own/feed-photo.jpg')] }]) })
    const second = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(second.counts.updated, 1, JSON.stringify(second))
    const photos = await t.app.inject({ url: `/property-images?property_id=${listing.id}`, headers: agency.headers })
    assert.deepEqual(
      photos
        .json<{ source_url?: string }[]>()
        .map((image) => image.source_url)
        .sort(),
      [server.url('/own/agency-photo.jpg'), server.url('/own/feed-photo.jpg')],
    )
  })
  it('does not download again a photo the agency attached from the same URL, when the feed takes the listing over', async () => {
    // An agency that kept its listings through the API (PUT by external id, photos by URL from
    // its CRM) switches to the CRM's feed, which lists the same listing and the same photo URLs.
    const agency = await createTenant(t.app, { email: 'api-then-feed@agency.example' })
    server.serve('/crm/photo-1.jpg', { body: await photo('jpeg', 120, 90), contentType: 'image/jpeg' })
    const put = await t.app.inject({ method: 'PUT', url: '/properties/by-external-id/crm-1', headers: agency.headers, payload: propertyBody() })
    assert.ok([200, 201].includes(put.statusCode), put.body)
    const listingId = put.json<{ id: number }>().id
    const added = await t.app.inject({
      method: 'POST',
      url: '/property-images',
      headers: agency.headers,
      payload: { property_id: listingId, url: server.url('/crm/photo-1.jpg'), sort_order: 0 },
    })
    assert.equal(added.statusCode, 201, added.body)

    server.serve('/api-then-feed.xml', { body: feedXml([{ id: 'crm-1', price: 5_000_000, images: [server.url('/crm/photo-1.jpg')] }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/api-then-feed.xml') })
    const report = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal((await listingByExternalId(t.app, agency, 'crm-1'))?.id, listingId, JSON.stringify(report))

    const photos = await t.app.inject({ url: `/property-images?property_id=${listingId}`, headers: agency.headers })
    const sources = photos.json<{ source_url?: string }[]>().map((image) => image.source_url)
    assert.deepEqual(sources, [server.url('/crm/photo-1.jpg')], `the listing shows the same photo ${sources.length} times`)
  })

  it('counts an offer whose photos changed as updated, not unchanged', async () => {
    const agency = await createTenant(t.app, { email: 'photo-count@agency.example' })
    server.serve('/pc/a.jpg', { body: await photo('jpeg', 120, 90), contentType: 'image/jpeg' })
    server.serve('/pc/b.jpg', { body: await photo('jpeg', 100, 80), contentType: 'image/jpeg' })
    server.serve('/photo-count.xml', { body: feedXml([{ id: 'pc-1', images: [server.url('/pc/a.jpg')] }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/photo-count.xml') })
    await runFeedNow(t.app, context(), agency, feed.id)
    server.serve('/photo-count.xml', { body: feedXml([{ id: 'pc-1', images: [server.url('/pc/a.jpg'), server.url('/pc/b.jpg')] }]) })
    const second = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(second.status, 'succeeded', JSON.stringify(second))
    const listing = await byExternalId(agency, 'pc-1')
    assert.equal(listing?.images.length, 2, 'the new photo was attached')
    assert.deepEqual(
      { updated: second.counts.updated, unchanged: second.counts.unchanged },
      { updated: 1, unchanged: 0 },
      'the listing got a new photo, yet the report says it was unchanged',
    )
  })

  it('keeps the check’s findings with the run that submitted the listing when a later run only re-sends its photos', async () => {
    const agency = await createTenant(t.app, { email: 'findings-move@agency.example' })
    server.serve('/fm/a.jpg', { body: await photo('jpeg', 120, 90), contentType: 'image/jpeg' })
    const bad: TestOffer = { id: 'fm-1', floor: 12, floorsTotal: 9 }
    server.serve('/findings-move.xml', { body: feedXml([bad]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/findings-move.xml') })
    const first = await runFeedNow(t.app, context(), agency, feed.id)
    await runInternalCheck(t.app)
    assert.equal((await byExternalId(agency, 'fm-1'))?.status_id, 3)
    const codes = async (runId: number) =>
      (await runReport(t.app, agency, feed.id, runId, '?limit=100')).problems.items.map((problem) => `${problem.internal_id}:${problem.code}`)
    assert.deepEqual(await codes(first.id), ['fm-1:floor_above_total_floors'])

    server.serve('/findings-move.xml', { body: feedXml([{ ...bad, images: [server.url('/fm/a.jpg')] }]) })
    const second = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal((await byExternalId(agency, 'fm-1'))?.status_id, 3, 'the listing was not resubmitted')
    assert.deepEqual(await codes(first.id), ['fm-1:floor_above_total_floors'], 'the first run’s report lost the verdict on what it submitted')
    assert.deepEqual(await codes(second.id), [], 'the second run submitted nothing to the check')
  })

  it('imports only the first of two offers with one internal-id, even when the first is refused', async () => {
    const agency = await createTenant(t.app, { email: 'dup-first-refused@agency.example' })
    server.serve('/dup.xml', {
      body: feedXml([
        { id: 'dup-1', price: null },
        { id: 'dup-1', price: 9_000_000 },
      ]),
    })
    const feed = await createFeed(t.app, agency, { url: server.url('/dup.xml') })
    const report = await runFeedNow(t.app, context(), agency, feed.id)
    const codes = report.problems.items.map((problem) => `${problem.internal_id}:${problem.code}`)
    assert.ok(codes.includes('dup-1:duplicate_internal_id'), `no duplicate reported: ${JSON.stringify(codes)}`)
    assert.equal(await byExternalId(agency, 'dup-1'), undefined, 'the second offer of the id was imported')
  })

  it('imports an offer without an owner, not refuses it, when the phone does not fit the agency’s country', async () => {
    const agency = await createTenant(t.app, { email: 'by-agency@agency.example', country: 'BY', phone: '+375 29 123-45-67' })
    server.serve('/by.xml', { body: feedXml([{ id: 'by-1', agent: { name: 'Иван', phone: '8 (912) 345-67-89' } }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/by.xml') })
    const report = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(report.counts.rejected, 0, JSON.stringify(report.problems.items))
    assert.ok(await byExternalId(agency, 'by-1'), 'the offer was refused for its owner’s phone')
  })

  it('stops a run whose worker is stopping while its file is still downloading, and lets go of it', async () => {
    const agency = await createTenant(t.app, { email: 'abort@agency.example' })
    const body = feedXml(offers(2, 'abt'))
    server.serve('/slow.xml', {
      body: async function* () {
        // The file arrives over about 6 seconds.
        for (let i = 0; i < body.length; i += Math.ceil(body.length / 30)) {
          yield body.slice(i, i + Math.ceil(body.length / 30))
          await new Promise((resolve) => setTimeout(resolve, 200))
        }
      },
    })
    const feed = await createFeed(t.app, agency, { url: server.url('/slow.xml') })
    await t.db.execute(sql`update feeds set next_run_at = now() + interval '1 day' where id = ${feed.id}::int`)
    const started = await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: agency.headers })
    assert.equal(started.statusCode, 202)
    // Other tests' runs may wait too: take this one.
    let run = await t.app.services.feeds.claimRun('stopping-worker')
    while (run && run.feedId !== feed.id) {
      await t.app.services.feeds.execute(run, 'stopping-worker')
      run = await t.app.services.feeds.claimRun('stopping-worker')
    }
    assert.ok(run)
    const stopping = new AbortController()
    const began = Date.now()
    setTimeout(() => stopping.abort(), 300)
    await t.app.services.feeds.execute(run, 'stopping-worker', stopping.signal)
    const took = Date.now() - began
    assert.ok(took < 2_000, `execute() returned ${took} ms after it began, ${took - 300} ms after the worker was told to stop`)
  })

  it('imports an offer refused for its city once the operator adds the city, at the next run of the same file', async () => {
    const agency = await createTenant(t.app, { email: 'new-city@agency.example' })
    server.serve('/new-city.xml', { body: feedXml([{ id: 'nc-1' }, { id: 'nc-2', locality: 'Тобольск' }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/new-city.xml') })
    const first = await runFeedNow(t.app, context(), agency, feed.id)
    assert.deepEqual(
      first.problems.items.map((problem) => `${problem.internal_id}:${problem.code}`),
      ['nc-2:unknown_locality'],
    )
    const city = await t.app.inject({
      method: 'POST',
      url: '/admin/cities',
      headers: adminHeaders,
      payload: { name: 'Тобольск', country: 'RU', region: 'Тюменская область', latitude: 58.2, longitude: 68.25 },
    })
    assert.equal(city.statusCode, 201, city.body)
    const second = await runFeedNow(t.app, context(), agency, feed.id)
    assert.ok(await byExternalId(agency, 'nc-2'), `the next run was ${second.status} and did not import nc-2`)
  })

  it('tries a photo that failed again at the next run, even when the file did not change', async () => {
    const agency = await createTenant(t.app, { email: 'photo-retry@agency.example' })
    const late = server.url('/pr/late.jpg')
    server.serve('/photo-retry.xml', { body: feedXml([{ id: 'pr-1', images: [late] }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/photo-retry.xml') })
    const first = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(first.counts.errors, 1, JSON.stringify(first))
    server.serve('/pr/late.jpg', { body: await photo('jpeg', 120, 90), contentType: 'image/jpeg' })
    const second = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal((await byExternalId(agency, 'pr-1'))?.images.length, 1, `the next run was ${second.status}; the photo is still missing`)
  })

  it('refuses the changed offer of a closed listing with a listing_conflict in Russian, and says nothing else of it', async () => {
    const agency = await createTenant(t.app, { email: 'conflict-ru@agency.example' })
    server.serve('/conflict.xml', { body: feedXml([{ id: 'cf-1' }, { id: 'cf-2' }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/conflict.xml') })
    await runFeedNow(t.app, context(), agency, feed.id)
    await runInternalCheck(t.app)
    await setStatus(agency, (await byExternalId(agency, 'cf-1'))!.id, 5)
    // The changed offer also names a district the MLS does not know, which alone would be left out.
    server.serve('/conflict.xml', { body: feedXml([{ id: 'cf-1', price: 4_000_000, subLocality: 'Нет такого района' }, { id: 'cf-2' }]) })
    const report = await runFeedNow(t.app, context(), agency, feed.id)
    assert.deepEqual(
      report.problems.items.map((problem) => `${problem.internal_id}:${problem.code}`),
      ['cf-1:listing_conflict'],
    )
    assert.match(report.problems.items[0]!.message, /[а-яё]/i, `an English message: ${report.problems.items[0]!.message}`)
    assert.deepEqual(
      { rejected: report.counts.rejected, errors: report.counts.errors, unchanged: report.counts.unchanged },
      { rejected: 1, errors: 0, unchanged: 1 },
    )
  })

  it('forgets, without failing the run, a listing the agency deletes while the run that made it is still going', async () => {
    const agency = await createTenant(t.app, { email: 'deleted-meanwhile@agency.example' })
    const stock = [{ id: 'dm-1', images: [server.url('/dm/1.jpg')] }, { id: 'dm-2' }, { id: 'dm-3' }]
    server.serve('/deleted-meanwhile.xml', { body: feedXml(stock) })
    // The agency deletes dm-1 while the run downloads its photo: after the run made the listing,
    // before it recorded what its offers became (a batch at a time, here at its end).
    const image = await photo('jpeg', 120, 90)
    server.serve('/dm/1.jpg', {
      body: async function* () {
        const made = await byExternalId(agency, 'dm-1')
        const deleted = await t.app.inject({ method: 'DELETE', url: `/properties/${made!.id}`, headers: agency.headers })
        assert.equal(deleted.statusCode, 204, deleted.body)
        yield image
      },
      contentType: 'image/jpeg',
    })
    const feed = await createFeed(t.app, agency, { url: server.url('/deleted-meanwhile.xml') })
    const first = await runFeedNow(t.app, context(), agency, feed.id)
    assert.notEqual(first.status, 'failed', `${first.failure_code}: ${first.detail}`)
    assert.equal(await byExternalId(agency, 'dm-1'), undefined)

    // dm-2 is sold and leaves the file: the feed still knows it brought that listing in.
    server.serve('/deleted-meanwhile.xml', { body: feedXml([stock[2]!]) })
    const second = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(second.status, 'succeeded', JSON.stringify(second))
    assert.equal((await byExternalId(agency, 'dm-2'))?.status_id, 4)
  })

  it('reports the listings a run created even when the run was taken over after its first worker applied the offers', async () => {
    const agency = await createTenant(t.app, { email: 'takeover@agency.example' })
    server.serve('/takeover.xml', { body: feedXml(offers(3, 'tko')) })
    const feed = await createFeed(t.app, agency, { url: server.url('/takeover.xml') })
    await t.db.execute(sql`update feeds set next_run_at = now() + interval '1 day' where id = ${feed.id}::int`)
    const started = await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: agency.headers })
    const runId = started.json<{ id: number }>().id
    let run = await t.app.services.feeds.claimRun('first-worker')
    while (run && run.id !== runId) {
      await t.app.services.feeds.execute(run, 'first-worker')
      run = await t.app.services.feeds.claimRun('first-worker')
    }
    assert.ok(run)
    // The first worker stalls past its lease while it applies the offers (or dies right after): another takes the run.
    await t.db.execute(sql`update feed_runs set lease_owner = 'stalled', lease_expires_at = now() - interval '1 second' where id = ${runId}::int`)
    await t.app.services.feeds.execute(run, 'first-worker')
    assert.equal((await runReport(t.app, agency, feed.id, runId)).status, 'running', 'the first worker could not record the run')
    const takeover = await t.app.services.feeds.claimRun('second-worker')
    assert.equal(takeover?.id, runId)
    await t.app.services.feeds.execute(takeover, 'second-worker')
    const report = await runReport(t.app, agency, feed.id, runId)
    const [listings] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from properties where tenant_id = ${agency.tenantId}::int`)
    assert.equal(listings!.n, 3)
    assert.equal(report.counts.created, 3, `the run created 3 listings; its report: ${JSON.stringify(report.counts)}`)
  })

  it('takes an offer’s first photos up to what a listing holds, says so at every run, and leaves the listing alone the second time', async () => {
    const agency = await createTenant(t.app, { email: 'many-photos@agency.example' })
    const urls = ['/mp/1.jpg', '/mp/2.jpg', '/mp/3.jpg'].map((path) => server.url(path))
    for (const [i, url] of urls.entries()) server.serve(new URL(url).pathname, { body: await photo('jpeg', 100 + i, 80), contentType: 'image/jpeg' })
    server.serve('/many-photos.xml', { body: feedXml([{ id: 'mp-1', images: urls }]) })
    const feed = await createFeed(t.app, agency, { url: server.url('/many-photos.xml') })
    const first = await runFeedNow(t.app, context(), agency, feed.id)
    const problems = (report: typeof first) => report.problems.items.map((problem) => `${problem.internal_id}:${problem.code}`)
    assert.deepEqual(problems(first), ['mp-1:too_many_images'])
    assert.deepEqual(
      (await byExternalId(agency, 'mp-1'))?.images.map((image) => image.source_url),
      urls.slice(0, 2),
    )
    const second = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(second.status, 'partially_succeeded')
    assert.deepEqual(problems(second), ['mp-1:too_many_images'])
    assert.deepEqual(
      { created: second.counts.created, updated: second.counts.updated, unchanged: second.counts.unchanged },
      { created: 0, updated: 0, unchanged: 1 },
    )
  })

  it('answers a report page past 2^31 with 422 or an empty page, never a 500', async () => {
    const agency = await createTenant(t.app, { email: 'offset@agency.example' })
    server.serve('/offset.xml', { body: feedXml(offers(1, 'off')) })
    const feed = await createFeed(t.app, agency, { url: server.url('/offset.xml') })
    const run = await runFeedNow(t.app, context(), agency, feed.id)
    const response = await t.app.inject({ method: 'GET', url: `/feeds/${feed.id}/runs/${run.id}?offset=3000000000`, headers: agency.headers })
    assert.ok(response.statusCode < 500, `${response.statusCode} ${response.body}`)
    assert.equal(typeof response.json<{ detail?: string }>(), 'object')
  })
})

describe('a feed run under way when its agency is suspended', () => {
  let t: TestApp
  let server: FeedServer
  const context = () => jobContext(t)
  const byExternalId = (tenant: Tenant, externalId: string) => listingByExternalId(t.app, tenant, externalId)

  /** Serves a photo at `path` that answers only once the returned function is called. */
  async function heldPhoto(path: string): Promise<() => void> {
    const jpeg = await photo('jpeg', 64, 48)
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    server.serve(path, {
      contentType: 'image/jpeg',
      body: async function* () {
        await gate
        yield jpeg
      },
    })
    return release
  }

  /**
   * Runs the feed on a worker, suspends its agency once `ready` holds, then lets the held photos
   * go: the run, as it ended.
   */
  async function runSuspendedMidway(agency: Tenant, feedId: number, release: () => void, ready: () => Promise<boolean>, what: string) {
    const started = await t.app.inject({ method: 'POST', url: `/feeds/${feedId}/runs`, headers: agency.headers })
    assert.equal(started.statusCode, 202, started.body)
    const running = new FeedRunJob({ pollIntervalMs: 50 }).runOnce(context())
    await waitFor(ready, 30_000, what)
    const suspended = await t.app.inject({ method: 'POST', url: `/admin/tenants/${agency.tenantId}/suspend`, headers: adminHeaders })
    assert.equal(suspended.statusCode, 200, suspended.body)
    release()
    await running
    const [run] = await queryRows<{ status: string; failure_code: string | null }>(
      t.db,
      sql`select status, failure_code from feed_runs where id = ${started.json<FeedRunSummary>().id}::int`,
    )
    return run
  }
  before(async () => {
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', FEED_POLL_INTERVAL_MS: '50' })
    server = await startFeedServer()
  })
  after(async () => {
    await t.close()
    await server.close()
  })

  it('applies no offer of a suspended agency: a run whose download was under way when the suspension landed fails with agency_suspended', async () => {
    const agency = await createTenant(t.app)
    const xml = feedXml(offers(3, 'susp'))
    const cut = xml.indexOf('<offer')
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    server.serve('/slow.xml', {
      body: async function* () {
        yield xml.slice(0, cut)
        await gate
        yield xml.slice(cut)
      },
    })
    const feed = await createFeed(t.app, agency, { url: server.url('/slow.xml') })
    const started = await t.app.inject({ method: 'POST', url: `/feeds/${feed.id}/runs`, headers: agency.headers })
    assert.equal(started.statusCode, 202, started.body)
    const run = started.json<FeedRunSummary>()

    const job = new FeedRunJob({ pollIntervalMs: 50 })
    const running = job.runOnce(jobContext(t))
    await waitFor(() => server.requests.some((request) => request.path === '/slow.xml'), 30_000, 'the feed’s download')
    // The operator suspends the agency while its file is still being downloaded.
    const suspended = await t.app.inject({ method: 'POST', url: `/admin/tenants/${agency.tenantId}/suspend`, headers: adminHeaders })
    assert.equal(suspended.statusCode, 200, suspended.body)
    release()
    await running

    const [listings] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from properties where tenant_id = ${agency.tenantId}::int`)
    const [report] = await queryRows<{ status: string; failure_code: string | null }>(
      t.db,
      sql`select status, failure_code from feed_runs where id = ${run.id}::int`,
    )
    // docs/feeds.md: `agency_suspended` (no run while the agency is suspended); a failed run changed nothing.
    assert.deepEqual({ listings: listings!.n, ...report }, { listings: 0, status: 'failed', failure_code: 'agency_suspended' })
  })

  it('remembers the offers a run applied when the suspension is seen where it asks between batches of offers', async () => {
    const agency = await createTenant(t.app, { email: 'batch-stop@agency.example' })
    const release = await heldPhoto('/batch-held.jpg')
    // 260 offers: 1–50 refused (unknown city), 51–99 taken at once, 100–200 held on their photo,
    // so that the reader waits before offer 201, where the run asks whether it may go on (every
    // 200 offers read). Fewer than 200 offers are applied by then: none is written to
    // feed_offers before the run stops there.
    const stock: TestOffer[] = Array.from({ length: 260 }, (_, i) => {
      const n = i + 1
      const offer: TestOffer = { id: `bs-${n}`, price: 5_000_000 + n * 1000 }
      if (n <= 50) offer.locality = 'Нигдеград'
      else if (n >= 100 && n <= 200) offer.images = [server.url('/batch-held.jpg')]
      return offer
    })
    server.serve('/batch-stop.xml', { body: feedXml(stock) })
    const feed = await createFeed(t.app, agency, { url: server.url('/batch-stop.xml') })
    const run = await runSuspendedMidway(
      agency,
      feed.id,
      release,
      async () => server.requests.some((request) => request.path === '/batch-held.jpg'),
      'the held photos are being downloaded',
    )
    assert.deepEqual(run, { status: 'failed', failure_code: 'agency_suspended' })
    const [made] = await queryRows<{ n: number }>(
      t.db,
      sql`select count(*)::int as n from properties where tenant_id = ${agency.tenantId}::int and external_id like 'bs-%'`,
    )
    const [remembered] = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from feed_offers where feed_id = ${feed.id}::int`)
    assert.ok(made!.n > 0, 'the run applied offers before it stopped')
    // docs/feeds.md: what those offers became is kept (a listing it made is the feed's).
    assert.equal(remembered!.n, made!.n, 'every listing the stopped run made is remembered as the feed’s')
  })

  it('keeps what a run applied before a suspension stopped it: its listings stay the feed’s, and its file is read again in full', async () => {
    const agency = await createTenant(t.app, { email: 'stopped-part-way@agency.example' })
    const first = feedXml([
      { id: 'pw-1', price: 5_000_000 },
      { id: 'pw-2', price: 5_001_000 },
    ])
    server.serve('/part-way.xml', { body: first })
    const feed = await createFeed(t.app, agency, { url: server.url('/part-way.xml') })
    assert.equal((await runFeedNow(t.app, context(), agency, feed.id)).status, 'succeeded')

    // The next file changes pw-1's price and adds a photo, drops pw-2 and brings pw-3. pw-1's
    // photo is held back until the agency is suspended: the run then stops before withdrawing pw-2.
    const release = await heldPhoto('/held.jpg')
    server.serve('/part-way.xml', {
      body: feedXml([
        { id: 'pw-1', price: 6_000_000, images: [server.url('/held.jpg')] },
        { id: 'pw-3', price: 5_002_000 },
      ]),
    })
    const stopped = await runSuspendedMidway(
      agency,
      feed.id,
      release,
      async () => server.requests.some((request) => request.path === '/held.jpg') && (await byExternalId(agency, 'pw-3')) !== undefined,
      'pw-1 applied with its photo downloading, and pw-3 made',
    )
    assert.deepEqual(stopped, { status: 'failed', failure_code: 'agency_suspended' })
    const unsuspended = await t.app.inject({ method: 'POST', url: `/admin/tenants/${agency.tenantId}/unsuspend`, headers: adminHeaders })
    assert.equal(unsuspended.statusCode, 200, unsuspended.body)
    assert.equal(Number((await byExternalId(agency, 'pw-1'))?.price), 6_000_000, 'the run applied pw-1 before it stopped')

    // The agency's CRM exports the first file again: it is imported, not taken for the file
    // imported before the stopped run, and pw-3, which the stopped run made, leaves.
    server.serve('/part-way.xml', { body: first })
    const again = await runFeedNow(t.app, context(), agency, feed.id)
    assert.equal(again.status, 'succeeded', JSON.stringify(again))
    assert.equal(Number((await byExternalId(agency, 'pw-1'))?.price), 5_000_000)
    assert.equal((await byExternalId(agency, 'pw-3'))?.status_id, 4, 'the listing the stopped run made is withdrawn with its offer')
    assert.notEqual((await byExternalId(agency, 'pw-2'))?.status_id, 4)
  })
})
