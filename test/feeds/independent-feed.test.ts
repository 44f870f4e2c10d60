/**
 * A feed written from the public format description apart from the reader's own fixtures, with
 * what real CRMs send: Russian and English values mixed, lower-case and ё-less place names,
 * unknown elements, a CDATA description with markup, several photos, offers missing every
 * optional element, and offers that must be refused. The report is compared, offer by offer,
 * with what the API then shows.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, type Tenant } from '../helpers/factories.js'
import { startFeedServer, type FeedServer } from '../helpers/feed-server.js'
import { createFeed, runFeedNow, listingByExternalId } from '../helpers/feeds.js'
import { jobContext } from '../helpers/jobs.js'
import { photo } from '../helpers/photos.js'

const fixture = readFileSync(new URL('./fixtures/independent.xml', import.meta.url), 'utf8')

describe('a feed written independently of the reader', () => {
  let t: TestApp
  let server: FeedServer
  let agency: Tenant

  before(async () => {
    t = await buildTestApp({ ALLOW_PRIVATE_NETWORK: 'true' })
    server = await startFeedServer()
    agency = await createTenant(t.app, { email: 'independent@feeds.example' })
    for (const [i, size] of [
      [1, 320],
      [2, 400],
      [3, 480],
    ] as const) {
      server.serve(`/msk-001/${i}.jpg`, { body: await photo('jpeg', size, 240), contentType: 'image/jpeg' })
    }
    // The photos are served here; everything else of the file is as written.
    server.serve('/feed.xml', { body: fixture.replaceAll('https://photos.agency.example/', server.url('/')) })
  })
  after(async () => {
    await t.close()
    await server.close()
  })

  const listing = (externalId: string) => listingByExternalId(t.app, agency, externalId)

  it('imports what it can, refuses the rest with their reasons, and the API shows what the report says', async () => {
    const feed = await createFeed(t.app, agency, { url: server.url('/feed.xml') })
    const report = await runFeedNow(t.app, jobContext(t), agency, feed.id)
    assert.equal(report.status, 'partially_succeeded', JSON.stringify(report))
    assert.equal(report.counts.offers, 11)
    assert.equal(report.counts.created, 7)
    assert.equal(report.counts.rejected, 4)

    const refusedWith = (id: string) => report.problems.items.filter((problem) => problem.internal_id === id).map((problem) => problem.code)
    assert.ok(refusedWith('GAR-007').includes('unknown_category'))
    assert.ok(refusedWith('NOWHERE-008').includes('unknown_locality'))
    assert.ok(refusedWith('NOPRICE-009').includes('missing_price'))
    assert.ok(refusedWith('USD-010').includes('unsupported_currency'))
    for (const id of ['GAR-007', 'NOWHERE-008', 'NOPRICE-009', 'USD-010']) assert.equal(await listing(id), undefined, `${id} is not imported`)
    for (const problem of report.problems.items) assert.match(problem.message, /[а-яё]/i, 'messages are in Russian')

    const flat = (await listing('MSK-001'))!
    assert.equal(flat.property_type, 'Квартира')
    assert.equal(flat.deal_type, 'Продажа')
    assert.equal(Number(flat.price), 18_500_000)
    assert.equal(flat.location?.city.name, 'Москва')
    assert.equal(flat.location?.district?.name, 'Центральный административный округ')
    assert.equal(Number(flat.location?.latitude), 55.7577)
    assert.equal(Number(flat.location?.longitude), 37.6133)
    assert.match(flat.description ?? '', /Светлая квартира с видом на парк\./)
    assert.match(flat.description ?? '', /метро & школа/, 'CDATA is text, entities and all')
    assert.equal(flat.owner?.name, 'Иван Петров')
    assert.equal(flat.owner?.phone, '+7 916 123-45-67')
    assert.deepEqual(
      {
        area: flat.attributes.area,
        living_area: flat.attributes.living_area,
        kitchen_area: flat.attributes.kitchen_area,
        rooms: flat.attributes.rooms,
        floor: flat.attributes.floor,
        total_floors: flat.attributes.total_floors,
        year_built: flat.attributes.year_built,
        balcony: flat.attributes.balcony,
        bathroom: flat.attributes.bathroom,
        elevator: flat.attributes.elevator,
        ceiling_height: flat.attributes.ceiling_height,
      },
      {
        area: 54.5,
        living_area: 32,
        kitchen_area: 10.5,
        rooms: 2,
        floor: 5,
        total_floors: 9,
        year_built: 1965,
        balcony: 'Лоджия',
        bathroom: 'Раздельный',
        elevator: true,
        ceiling_height: 2.8,
      },
    )
    assert.ok(flat.attributes.building_type === 'Кирпичный' || flat.attributes.wall_material === 'Кирпич' || flat.attributes.wall_material === 'Кирпичный')
    assert.equal(flat.images.length, 3)
    assert.deepEqual(
      flat.images.map((image) => image.width),
      [320, 400, 480],
      'photos in the order of the feed',
    )

    const rent = (await listing('MSK-002'))!
    assert.equal(rent.deal_type, 'Долгосрочная аренда', 'rent by the month, in English')
    assert.equal(rent.location?.city.name, 'Москва', 'a lower-case city name')
    assert.equal(rent.attributes.area, 70)

    const daily = (await listing('UFA-003'))!
    assert.equal(daily.deal_type, 'Посуточная аренда')
    assert.equal(daily.location?.district?.name, 'Дёмский', 'a district written without ё')

    const house = (await listing('HOUSE-004'))!
    assert.equal(house.property_type, 'Дом')
    assert.equal(house.attributes.area_land, 6)

    const land = (await listing('LAND-005'))!
    assert.equal(land.property_type, 'Земля')
    assert.equal(land.attributes.area_land, 15, '0.15 hectares are 15 sotkas')

    const commercial = (await listing('COM-006'))!
    assert.equal(commercial.property_type, 'Коммерция')
    assert.equal(commercial.deal_type, 'Долгосрочная аренда')

    const minimal = (await listing('MIN-011'))!
    assert.equal(minimal.location?.city.name, 'Новосибирск')
    assert.equal(minimal.owner, null)
    assert.equal(minimal.description, null)

    const again = await runFeedNow(t.app, jobContext(t), agency, feed.id)
    assert.ok(again.status === 'unchanged' || again.counts.unchanged === 7, JSON.stringify(again.counts))
    assert.equal(again.counts.created + again.counts.updated + again.counts.withdrawn, 0)
  })
})
