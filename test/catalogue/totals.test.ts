import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { CataloguePage } from '../helpers/responses.js'

/**
 * Price-range totals come from price bands plus the listings at the range's two ends
 * (catalogue.repository.ts, migrations 0008 and 0016 for districts). Compared here with a plain count for every pair of
 * bounds, on prices placed at and around the bands' edges.
 */
describe('catalogue totals with a price range', () => {
  let t: TestApp
  const prices = [9.5, 10, 10.5, 99, 99.99, 100, 1_000, 1_099.99, 1_100, 45_000, 12_000_000, 12_999_999.99, 13_000_000, 60_000_000]
  // Bounds in the lower and the upper half of their band: each end is counted from its smaller side.
  const bounds = [
    undefined,
    0,
    9.99,
    10,
    99.99,
    100,
    1_099.99,
    1_100,
    45_000,
    45_000.01,
    12_000_000,
    12_400_000,
    12_500_000,
    12_600_000,
    13_000_000,
    99_000_000,
  ]

  before(async () => {
    t = await buildTestApp()
    const agency = await createTenant(t.app)
    for (const [index, price] of prices.entries()) {
      await submitProperty(t.app, agency, {
        price,
        deal_type: index % 3 === 0 ? 'Долгосрочная аренда' : 'Продажа',
        // Moscow's listings in two of its districts, so district searches have ranges too.
        location:
          index % 2 === 0
            ? { city_id: 1, district_id: index % 4 === 0 ? 1 : 6, address: `ул. Ценовая, д. ${index + 1}` }
            : { city_id: 2, address: `ул. Ценовая, д. ${index + 1}` },
        attributes: { area: '50', rooms: String(1 + (index % 3)) },
      })
    }
    await runInternalCheck(t.app)
  })
  after(() => t.close())

  it('equals a plain count for every pair of bounds, with and without other filters', async () => {
    const published = await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from properties where status_id = 2`)
    assert.equal(published[0]!.n, prices.length)
    let compared = 0
    for (const others of [
      '',
      '&city_id=1',
      '&deal_type_id=1&property_type_id=1',
      '&city_id=2&rooms=2',
      '&rooms=1',
      '&district_id=1',
      '&city_id=1&district_id=6&deal_type_id=1',
      '&district_id=6&rooms=1&property_type_id=1',
      // Another city's district: nothing matches, whatever the bands of the district hold.
      '&city_id=2&district_id=1',
    ]) {
      for (const min of bounds) {
        for (const max of bounds) {
          if (min !== undefined && max !== undefined && min > max) continue
          if (min === undefined && max === undefined) continue
          const query = `${min === undefined ? '' : `&min_price=${min}`}${max === undefined ? '' : `&max_price=${max}`}${others}`
          const response = await t.app.inject(`/mls/properties?limit=100${query}`)
          assert.equal(response.statusCode, 200, response.body)
          const page = response.json<CataloguePage>()
          // Fewer than 100 listings in all: the page holds every match, so it is the plain count.
          assert.equal(page.total, page.items.length, `total for ${query}`)
          compared++
        }
      }
    }
    assert.ok(compared > 600)
  })

  it('follows a price change of a published listing', async () => {
    const [row] = await queryRows<{ id: number }>(t.db, sql`select id from properties where price = 45000`)
    const inBand = async () => (await t.app.inject('/mls/properties?min_price=40000&max_price=50000')).json<CataloguePage>().total
    assert.equal(await inBand(), 1)
    await t.db.execute(sql`update properties set price = 55000 where id = ${row!.id}`)
    assert.equal(await inBand(), 0)
    assert.equal((await t.app.inject('/mls/properties?min_price=55000&max_price=55000')).json<CataloguePage>().total, 1)
  })

  // After the tests above on purpose: the price change of the one before goes through the trigger.
  it('keeps the counts tables as a rebuild from the listings would, after the price change too', async () => {
    const tables = [
      'catalogue_counts',
      'catalogue_counts_by_city',
      'catalogue_counts_by_price',
      'catalogue_counts_by_price_all_cities',
      'catalogue_counts_by_district_price',
    ]
    // The trigger leaves rows counting nothing where listings left; a rebuild has none.
    const contents = async () =>
      Promise.all(
        tables.map(async (table) =>
          (await queryRows(t.db, sql`select * from ${sql.identifier(table)} where listings > 0`)).map((row) => JSON.stringify(row)).sort(),
        ),
      )
    const kept = await contents()
    assert.ok(kept.every((rows) => rows.length > 0))
    await t.db.execute(sql`select catalogue_counts_rebuild()`)
    assert.deepEqual(await contents(), kept)
  })
})
