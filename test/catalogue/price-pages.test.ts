import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { CataloguePage } from '../helpers/responses.js'

/**
 * A price range, newest first, is read one of two ways, chosen from the search's counts
 * (catalogue.repository.ts, PagePlan): walking the newest listings when the range keeps many of
 * them, or every match by price when it keeps few; a walk that comes up short of the page is read
 * again the second way. Here the prices are not spread over time: the 300 newest listings are
 * cheap and the 150 oldest dear, so a walk for the dear ones finds none in the newest and must
 * fall back. Every page is compared with the same page ordered by a plain query.
 */
describe('catalogue pages with a price range, newest first', () => {
  let t: TestApp
  const CHEAP = 1_000_000
  const DEAR = 9_000_000

  before(async () => {
    t = await buildTestApp()
    const agency = await createTenant(t.app)
    const template = await submitProperty(t.app, agency, { price: CHEAP, attributes: { area: '40', rooms: '2' } })
    await runInternalCheck(t.app)
    // Copies of the published template, set-based: 450 submissions through the API would
    // make this file the slowest of the suite for nothing the API tests don't already cover.
    await t.db.execute(sql`
      insert into properties (tenant_id, status_id, property_type_id, deal_type_id, price, description, owner_id, city_id,
        district_id, address, attributes, created_at, updated_at, published_at)
      select tenant_id, status_id, property_type_id, deal_type_id,
             case when n <= 150 then ${DEAR} + n * 1000 else ${CHEAP} + n * 1000 end,
             description, owner_id, city_id, district_id, address, attributes,
             now() - make_interval(mins => 1000 - n), now(), now()
        from properties, generate_series(1, 450) as n
       where id = ${template.id}`)
  })
  after(() => t.close())

  async function expectedIds(min: number | undefined, max: number | undefined, limit: number, offset: number): Promise<number[]> {
    const rows = await queryRows<{ id: number }>(
      t.db,
      sql`select id from properties where status_id = 2 and city_id = 1
           and price >= ${min ?? 0} and price <= ${max ?? 1e12}
           order by created_at desc, id desc limit ${limit} offset ${offset}`,
    )
    return rows.map((row) => row.id)
  }

  const cases: [label: string, min: number | undefined, max: number | undefined][] = [
    ['the dear, oldest listings (the walk falls short)', DEAR, undefined],
    ['a handful of the dear ones (read by price)', DEAR + 10_000, DEAR + 20_000],
    ['the cheap, newest listings (a walk)', undefined, CHEAP + 451_000],
    ['every listing', 0, DEAR * 2],
    ['a range matching nothing', DEAR * 3, DEAR * 4],
  ]
  for (const [label, min, max] of cases) {
    it(`pages ${label} exactly as a plain query orders them`, async () => {
      for (const [limit, offset] of [
        [5, 0],
        [20, 0],
        [20, 40],
        [50, 100],
        [100, 300],
        [10, 445],
        [10, 1000],
      ] as const) {
        const query = `city_id=1&limit=${limit}&offset=${offset}${min === undefined ? '' : `&min_price=${min}`}${max === undefined ? '' : `&max_price=${max}`}`
        const response = await t.app.inject(`/mls/properties?${query}`)
        assert.equal(response.statusCode, 200, response.body)
        const page = response.json<CataloguePage>()
        assert.deepEqual(
          page.items.map((item) => item.id),
          await expectedIds(min, max, limit, offset),
          query,
        )
        const [count] = await queryRows<{ n: number }>(
          t.db,
          sql`select count(*)::int as n from properties where status_id = 2 and city_id = 1 and price >= ${min ?? 0} and price <= ${max ?? 1e12}`,
        )
        assert.equal(page.total, count!.n, `total for ${query}`)
      }
    })
  }
})
