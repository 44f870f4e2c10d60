import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { eq, sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { properties } from '../../src/db/schema.js'
import { boxAround, distanceMetres } from '../../src/modules/catalogue/geo.js'
import { compileFilter } from '../../src/modules/catalogue/listing-filter.js'
import { listingFactsOf } from '../../src/modules/catalogue/listing-facts.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { CataloguePage } from '../helpers/responses.js'

/**
 * A listing at the very edge of `near` and `radius_m`: found by the catalogue, and matched alike
 * by a subscription's filter, whose distance JavaScript computes where the catalogue's is SQL's.
 */
describe('the edge of a radius', () => {
  let t: TestApp
  let agency: Tenant
  const ids: Record<string, number> = {}

  async function publish(name: string, lat: number | null, lon: number | null, price = 5_000_000) {
    const property = await submitProperty(t.app, agency, {
      price,
      location: { city_id: 1, address: `ул. Обзорная, д. ${Object.keys(ids).length + 1}`, latitude: lat, longitude: lon },
      attributes: { area: '50', rooms: '2' },
    })
    ids[name] = property.id
  }

  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app)
    await publish('equator', 0.970873, 37.6)
    await publish('moscow', 55.75, 37.62)
    await publish('ulp', -21.239089, 2.543529)
    await runInternalCheck(t.app)
  })
  after(() => t.close())

  it('finds a listing exactly radius_m from near, due south of it', async () => {
    const [lat, lon] = [0.970873, 37.6]
    const nearLat = 1.5231250953729942
    const radiusM = distanceMetres(lat, lon, nearLat, lon)
    // The listing is within radius_m as geo.ts measures it, and as the SQL does:
    assert.ok(distanceMetres(lat, lon, nearLat, lon) <= radiusM)
    const [row] = await queryRows<{ metres: number }>(
      t.db,
      sql`select 2 * 6371008.8::float8 * asin(least(1, sqrt(power(sin(radians(${lat}::numeric(9,6)::float8 - ${nearLat}::float8) / 2), 2)
          + cos(radians(${nearLat}::float8)) * cos(radians(${lat}::numeric(9,6)::float8)) * power(sin(radians(${lon}::numeric(9,6)::float8 - ${lon}::float8) / 2), 2)))) as metres`,
    )
    assert.ok(row!.metres <= radiusM, `SQL distance ${row!.metres} > ${radiusM}`)
    // The box the SQL first narrows to must not end just north of it.
    const box = boxAround({ lat: nearLat, lon, radiusM })
    const response = await t.app.inject(`/mls/properties?near=${nearLat},${lon}&radius_m=${radiusM}`)
    assert.equal(response.statusCode, 200, response.body)
    const page = response.json<CataloguePage>()
    assert.deepEqual(
      page.items.map((item) => item.id),
      [ids.equator],
      `box south ${box.south} > listing latitude ${lat}: the listing at distance ${radiusM} m is missed`,
    )
    assert.equal(page.total, 1)
  })

  it('a filtered subscription matches a listing near the edge of radius_m as the catalogue does', async () => {
    // The catalogue decides `near` in SQL (the database's maths library), a subscription in
    // JavaScript (V8's): the same haversine, whose last bits differ for this pair on PGlite.
    const [lat, lon] = [-21.239089, 2.543529]
    const [nearLat, nearLon] = [-21.046682972178946, 3.121946025184943]
    const js = distanceMetres(lat, lon, nearLat, nearLon)
    const [row] = await queryRows<{ metres: number }>(
      t.db,
      sql`select 2 * 6371008.8::float8 * asin(least(1, sqrt(power(sin(radians(${lat}::numeric(9,6)::float8 - ${nearLat}::float8) / 2), 2)
          + cos(radians(${nearLat}::float8)) * cos(radians(${lat}::numeric(9,6)::float8)) * power(sin(radians(${lon}::numeric(9,6)::float8 - ${nearLon}::float8) / 2), 2)))) as metres`,
    )
    const inSql = Number(row!.metres)
    const radiusM = Math.min(js, inSql)
    const near = `${nearLat},${nearLon}`
    const response = await t.app.inject(`/mls/properties?near=${near}&radius_m=${radiusM}`)
    assert.equal(response.statusCode, 200, response.body)
    const inCatalogue = response.json<CataloguePage>().items.some((item) => item.id === ids.ulp)
    const [stored] = await t.db.select().from(properties).where(eq(properties.id, ids.ulp!))
    const facts = listingFactsOf(stored!)
    const bySubscription = compileFilter({ near, radius_m: radiusM })(facts)
    assert.equal(inCatalogue, true, `radius_m=${radiusM}: the catalogue left out a listing that far (JS ${js}, SQL ${inSql})`)
    assert.equal(
      bySubscription,
      inCatalogue,
      `radius_m=${radiusM}: the catalogue says ${inCatalogue}, a subscription's filter says ${bySubscription} (JS ${js}, SQL ${inSql})`,
    )
  })
})
