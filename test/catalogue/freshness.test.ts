import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import type { CatalogueDetail } from '../../src/modules/catalogue/catalogue.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import { photo, upload } from '../helpers/photos.js'
import type { CataloguePage, StoredImage } from '../helpers/responses.js'

/**
 * The catalogue keeps its answers in each API process (catalogue-cache.ts) until the database's
 * counters for the cities they show move. Every change that shows in the catalogue must move
 * them in its own transaction, so an answer is never older than the last commit before the
 * request: checked here for each kind of change, through a second API process too.
 */
describe('catalogue answers kept between requests', () => {
  let t: TestApp
  let other: FastifyInstance
  let agency: Tenant

  before(async () => {
    t = await buildTestApp()
    // A second API process on the same database: its own kept answers, the same counters.
    other = await buildApp({ config: t.config, database: t.database.handle, logger: false })
    await other.ready()
    agency = await createTenant(t.app)
  })
  after(async () => {
    await other.close()
    await t.close()
  })

  const search = async (app: FastifyInstance, query: string) => {
    const response = await app.inject(`/mls/properties${query}`)
    assert.equal(response.statusCode, 200, response.body)
    return response.json<CataloguePage>()
  }
  const detail = (app: FastifyInstance, id: number) => app.inject(`/mls/properties/${id}`)
  let listings = 0
  /** A listing through submission and the internal check; each at its own address, so none is a duplicate. */
  const publish = async ({ price = 8_500_000, cityId }: { price?: number; cityId: number }) => {
    const { id } = await submitProperty(t.app, agency, { price, location: { city_id: cityId, address: `ул. Тестовая, д. ${++listings}` } })
    await runInternalCheck(t.app)
    return id
  }
  /** Asks both processes, so each has the answer kept before the change under test. */
  const warm = async (queries: string[], ids: number[] = []) => {
    for (const app of [t.app, other]) {
      for (const query of queries) await search(app, query)
      for (const id of ids) await detail(app, id)
    }
  }

  it('keeps an answer until something it shows changes', async () => {
    const id = await publish({ price: 7_000_000, cityId: 1 })
    await warm(['?city_id=1'], [id])
    // Behind the triggers' back (replication role skips them): the kept answer stays as it was,
    // which shows it is kept, and why every change must go through the triggers.
    await t.db.transaction(async (tx) => {
      await tx.execute(sql`set local session_replication_role = replica`)
      await tx.execute(sql`update properties set price = 7100000 where id = ${id}`)
    })
    assert.equal((await search(t.app, '?city_id=1')).items[0]!.price, 7_000_000)
    await t.db.execute(sql`select catalogue_versions_bump(array[1])`)
    for (const app of [t.app, other]) {
      assert.equal((await search(app, '?city_id=1')).items[0]!.price, 7_100_000)
      assert.equal((await detail(app, id)).json<CatalogueDetail>().price, 7_100_000)
    }
  })

  it('shows a publication at once, in its city and in searches over every city', async () => {
    const first = await publish({ cityId: 2 })
    await warm(['', '?city_id=2', '?city_id=3'])
    const before = { all: (await search(t.app, '')).total, city: (await search(t.app, '?city_id=2')).total }

    const second = await publish({ cityId: 2 })
    for (const app of [t.app, other]) {
      const all = await search(app, '')
      assert.equal(all.total, before.all + 1)
      assert.equal(all.items[0]!.id, second)
      const city = await search(app, '?city_id=2')
      assert.deepEqual(city.items.map((item) => item.id).slice(0, 2), [second, first])
      assert.equal(city.total, before.city + 1)
      assert.equal((await search(app, '?city_id=3')).total, 0)
    }
  })

  it('drops a listing at once when it is withdrawn or deleted, and shows an approved edit at once', async () => {
    const withdrawn = await publish({ cityId: 3 })
    const edited = await publish({ cityId: 3 })
    const deleted = await publish({ cityId: 3 })
    const shown = async (app: FastifyInstance) => (await search(app, '?city_id=3')).items.map((item) => item.id)
    await warm(['?city_id=3'], [withdrawn, edited, deleted])

    const moved = await t.app.inject({ method: 'POST', url: `/properties/${withdrawn}/status`, headers: agency.headers, payload: { status_id: 4 } })
    assert.equal(moved.statusCode, 200, moved.body)
    for (const app of [t.app, other]) {
      assert.deepEqual(await shown(app), [deleted, edited])
      assert.equal((await detail(app, withdrawn)).statusCode, 404)
    }

    // An edit stays online at its approved version until the check passes it, then shows at once.
    const patched = await t.app.inject({ method: 'PATCH', url: `/properties/${edited}`, headers: agency.headers, payload: { price: 9_900_000 } })
    assert.equal(patched.statusCode, 200, patched.body)
    const price = async (app: FastifyInstance) => (await search(app, '?city_id=3')).items.find((item) => item.id === edited)?.price
    for (const app of [t.app, other]) {
      assert.deepEqual(await shown(app), [deleted, edited])
      assert.equal(await price(app), 8_500_000)
    }
    await runInternalCheck(t.app)
    for (const app of [t.app, other]) {
      assert.equal(await price(app), 9_900_000)
      assert.equal((await detail(app, edited)).json<CatalogueDetail>().price, 9_900_000)
    }

    const removed = await t.app.inject({ method: 'DELETE', url: `/properties/${deleted}`, headers: agency.headers })
    assert.equal(removed.statusCode, 204, removed.body)
    for (const app of [t.app, other]) {
      assert.deepEqual(await shown(app), [edited])
      assert.equal((await detail(app, deleted)).statusCode, 404)
    }
  })

  it('shows a published listing’s photos at once as they are added, reordered and removed', async () => {
    const id = await publish({ cityId: 4 })
    const thumbnail = async (app: FastifyInstance) => (await search(app, '?city_id=4')).items[0]!.thumbnail_url
    const images = async (app: FastifyInstance) => (await detail(app, id)).json<CatalogueDetail>().images
    await warm(['?city_id=4'], [id])

    const uploaded = []
    for (const fields of [{ sort_order: '5' }, { sort_order: '9' }]) {
      const response = await upload(t.app, agency, { file: await photo('jpeg'), fields: { property_id: String(id), ...fields } })
      assert.equal(response.statusCode, 201, response.body)
      uploaded.push(response.json<StoredImage>())
    }
    const [front, back] = uploaded as [(typeof uploaded)[0], (typeof uploaded)[0]]
    for (const app of [t.app, other]) {
      assert.equal(await thumbnail(app), front.thumbnail_url)
      assert.deepEqual(await images(app), [front.url, back.url])
    }

    const reordered = await t.app.inject({ method: 'PUT', url: `/property-images/${back.id}`, headers: agency.headers, payload: { sort_order: 1 } })
    assert.equal(reordered.statusCode, 200, reordered.body)
    for (const app of [t.app, other]) {
      assert.equal(await thumbnail(app), back.thumbnail_url)
      assert.deepEqual(await images(app), [back.url, front.url])
    }

    for (const image of [back, front]) {
      const removed = await t.app.inject({ method: 'DELETE', url: `/property-images/${image.id}`, headers: agency.headers })
      assert.equal(removed.statusCode, 204, removed.body)
    }
    for (const app of [t.app, other]) {
      assert.equal(await thumbnail(app), null)
      assert.deepEqual(await images(app), [])
    }
  })

  it('answers 304 to the ETag of a kept answer, and a new ETag after a change', async () => {
    const id = await publish({ cityId: 5 })
    const first = await t.app.inject(`/mls/properties?city_id=5`)
    const etag = first.headers.etag as string
    assert.ok(etag)
    const again = await t.app.inject({ url: `/mls/properties?city_id=5`, headers: { 'if-none-match': etag } })
    assert.equal(again.statusCode, 304)
    assert.equal(again.body, '')
    assert.equal(again.headers['cache-control'], 'public, max-age=30')
    // A long list of tags held (a cache's) is evaluated like a short one, never refused.
    const held = [...Array.from({ length: 300 }, (_, n) => `"old-tag-${n}"`), etag].join(', ')
    assert.equal((await t.app.inject({ url: `/mls/properties?city_id=5`, headers: { 'if-none-match': held } })).statusCode, 304)
    const stale = held.replace(etag, '"another"')
    assert.equal((await t.app.inject({ url: `/mls/properties?city_id=5`, headers: { 'if-none-match': stale } })).statusCode, 200)

    const withdrawn = await t.app.inject({ method: 'POST', url: `/properties/${id}/status`, headers: agency.headers, payload: { status_id: 4 } })
    assert.equal(withdrawn.statusCode, 200, withdrawn.body)
    const changed = await t.app.inject({ url: `/mls/properties?city_id=5`, headers: { 'if-none-match': etag } })
    assert.equal(changed.statusCode, 200)
    assert.notEqual(changed.headers.etag, etag)
    assert.equal(changed.json<CataloguePage>().total, 0)
  })
})
