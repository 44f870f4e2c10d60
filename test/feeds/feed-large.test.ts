import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/factories.js'
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js'
import { createFeed, runFeedNow } from '../helpers/feeds.js'
import { jobContext } from '../helpers/jobs.js'
import { generateYandexFeed } from '../helpers/yandex-feed.js'

const OFFERS = 10_000

/** What a second import must leave alone: listings, the outbox, the catalogue's versions and change feed. */
async function footprint(t: TestApp, tenantId: number) {
  const [row] = await queryRows<{ listings: number; last_update: string; events: number; versions: string; changes: number }>(
    t.db,
    sql`select (select count(*)::int from properties where tenant_id = ${tenantId}::int) as listings,
               (select max(updated_at)::text from properties where tenant_id = ${tenantId}::int) as last_update,
               (select count(*)::int from events where type <> 'feed.run_finished') as events,
               (select coalesce(string_agg(city_id || ':' || version, ',' order by city_id), '') from catalogue_versions) as versions,
               (select count(*)::int from catalogue_changes) as changes`,
  )
  return row!
}

describe('a 10,000-offer feed imported twice', () => {
  let t: TestApp
  let server: FeedServer

  before(async () => {
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true', FEED_PHOTOS: 'false' })
    server = await startFeedServer()
  })
  after(async () => {
    await t.close()
    await server.close()
  })

  it('creates the listings once; the second run, of a file whose offers did not change, touches nothing', async () => {
    const agency = await createTenant(t.app, { email: 'large@feeds.example' })
    server.serve('/large.xml', { body: () => generateYandexFeed(OFFERS, { seed: 7 }), gzip: true })
    const feed = await createFeed(t.app, agency, { url: server.url('/large.xml') })
    const first = await runFeedNow(t.app, jobContext(t), agency, feed.id)
    assert.notEqual(first.status, 'failed', JSON.stringify(first))
    assert.equal(first.counts.offers, OFFERS)
    assert.equal(first.counts.created + first.counts.rejected, OFFERS)
    assert.ok(first.counts.created > OFFERS * 0.9, `created ${first.counts.created}`)
    const before = await footprint(t, agency.tenantId)
    assert.equal(before.listings, first.counts.created)

    // The same offers in a file that is not byte for byte the same: each offer is compared.
    server.serve('/large.xml', {
      body: async function* () {
        yield* generateYandexFeed(OFFERS, { seed: 7 })
        yield '<!-- exported again -->\n'
      },
    })
    const second = await runFeedNow(t.app, jobContext(t), agency, feed.id)
    assert.equal(second.status, first.status)
    assert.deepEqual(second.counts, { ...first.counts, created: 0, unchanged: first.counts.created })
    assert.deepEqual(await footprint(t, agency.tenantId), before)
  })
})
