import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql, type SQL } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { CataloguePage, ValidationErrorBody } from '../helpers/responses.js'

/**
 * Pages by cursor (`next_cursor` → `cursor=`): walking every page of a search gives exactly the
 * search's order as a plain query writes it, for every sort, with and without filters; listings
 * without a price come last ascending and first descending (PostgreSQL's NULLS LAST / FIRST);
 * listings published between two pages neither shift nor repeat what the walk shows.
 */
describe('catalogue pages by cursor', () => {
  let t: TestApp
  let template: number
  const CHEAP = 1_000_000
  const DEAR = 9_000_000

  /** Copies of the published template, `n` from `from` to `to`, each field an SQL expression of n. */
  async function copies(from: number, to: number, price: SQL, createdAt: SQL, rooms: SQL = sql`(attributes ->> 'rooms')`) {
    await t.db.execute(sql`
      insert into properties (tenant_id, status_id, property_type_id, deal_type_id, price, description, owner_id, city_id,
        district_id, address, attributes, created_at, updated_at, published_at)
      select tenant_id, status_id, property_type_id, case when n % 4 = 0 then 2 else deal_type_id end, ${price},
             description, owner_id, city_id, district_id, address,
             attributes || jsonb_build_object('rooms', ${rooms}), ${createdAt}, now(), now()
        from properties, generate_series(${from}::int, ${to}::int) as n
       where id = ${template}`)
  }

  before(async () => {
    t = await buildTestApp()
    const agency = await createTenant(t.app)
    template = (await submitProperty(t.app, agency, { price: CHEAP, attributes: { area: '40', rooms: '2' } })).id
    await runInternalCheck(t.app)
    // Ties everywhere a key can tie: three listings share each creation time (to the
    // microsecond), prices repeat every 17, one in five has no price; the 100 oldest are dear,
    // the rest cheap, so a price range newest first is walked or read by price.
    await copies(
      1,
      320,
      sql`case when n % 5 = 0 then null when n <= 100 then ${DEAR} + (n % 17) * 1000 else ${CHEAP} + (n % 17) * 1000 end`,
      sql`timestamptz '2026-01-01 00:00:00.123456+00' + make_interval(secs => (n / 3) * 60)`,
      sql`(n % 3)::text`,
    )
  })
  after(() => t.close())

  const orders = {
    created_desc: sql`created_at desc, id desc`,
    price_asc: sql`price asc nulls last, id asc`,
    price_desc: sql`price desc nulls first, id desc`,
  }
  type Sort = keyof typeof orders

  /** The search's ids in order, by a plain query. */
  async function expectedIds(sort: Sort, where: SQL): Promise<number[]> {
    const rows = await queryRows<{ id: number }>(t.db, sql`select id from properties where status_id = 2 and ${where} order by ${orders[sort]}`)
    return rows.map((row) => row.id)
  }

  async function page(query: string): Promise<CataloguePage> {
    const response = await t.app.inject(`/mls/properties?${query}`)
    assert.equal(response.statusCode, 200, `${query}: ${response.body}`)
    return response.json<CataloguePage>()
  }

  /** Every page of a search by cursor, from the first (by offset 0); each page's own checks on the way. */
  async function walk(query: string, limit: number, between?: (pages: number) => Promise<void>): Promise<number[]> {
    const ids: number[] = []
    let current = await page(`${query}&limit=${limit}`)
    const total = current.total
    for (let pages = 1; ; pages++) {
      assert.equal(current.limit, limit)
      assert.equal(current.offset, 0)
      ids.push(...current.items.map((item) => item.id))
      if (current.next_cursor === null) break
      assert.equal(current.items.length, limit, 'only the last page is short')
      assert.ok(pages < 1000, 'the walk ends')
      await between?.(pages)
      current = await page(`${query}&limit=${limit}&cursor=${current.next_cursor}`)
      if (!between) assert.equal(current.total, total, 'every page of the walk has the search total')
    }
    return ids
  }

  const searches: [label: string, query: string, where: SQL][] = [
    ['every listing', '', sql`true`],
    ['a city', 'city_id=1', sql`city_id = 1`],
    ['a deal', 'deal_type_id=2', sql`deal_type_id = 2`],
    ['rooms', 'rooms=1', sql`rooms = 1`],
    ['the cheap (a walk newest first)', `max_price=${CHEAP + 20_000}`, sql`price <= ${CHEAP + 20_000}`],
    ['the dear (a walk falls short; by price)', `min_price=${DEAR}`, sql`price >= ${DEAR}`],
    [
      'a narrow price range',
      `min_price=${DEAR + 3000}&max_price=${DEAR + 5000}&city_id=1`,
      sql`price between ${DEAR + 3000} and ${DEAR + 5000} and city_id = 1`,
    ],
    ['nothing', `min_price=${DEAR * 3}`, sql`price >= ${DEAR * 3}`],
  ]
  for (const sort of Object.keys(orders) as Sort[]) {
    for (const [label, query, where] of searches) {
      it(`walks ${label}, ${sort}, exactly as a plain query orders it`, async () => {
        const expected = await expectedIds(sort, where)
        for (const limit of [7, 50]) {
          assert.deepEqual(await walk(`${query}&sort=${sort}`, limit), expected, `${query} sort=${sort} limit=${limit}`)
        }
      })
    }
  }

  it('gives a next_cursor on an offset page too, and null on the last page', async () => {
    const all = await expectedIds('price_asc', sql`true`)
    const middle = await page(`sort=price_asc&limit=10&offset=60`)
    assert.deepEqual(
      middle.items.map((item) => item.id),
      all.slice(60, 70),
    )
    const next = await page(`sort=price_asc&limit=10&cursor=${middle.next_cursor}`)
    assert.deepEqual(
      next.items.map((item) => item.id),
      all.slice(70, 80),
    )
    const last = await page(`sort=price_asc&limit=10&offset=${all.length - 10}`)
    assert.equal(last.items.length, 10)
    assert.equal(last.next_cursor, null, 'a full page that ends the search is the last')
  })

  it('neither shifts nor repeats items when listings are published between pages', async () => {
    for (const sort of Object.keys(orders) as Sort[]) {
      const before = await expectedIds(sort, sql`true`)
      let added = 0
      const seen = await walk(`sort=${sort}`, 20, async (pages) => {
        // Newer than all, and priced among the rest (cheapest, dearest, none): wherever the sort puts them.
        const from = 10_000 + 10 * (added + pages)
        await copies(from, from + 2, sql`case when n % 3 = 0 then null when n % 3 = 1 then 1 else ${DEAR * 2} end`, sql`now()`)
        added += 3
      })
      assert.equal(new Set(seen).size, seen.length, `${sort}: no listing shows twice`)
      const original = new Set(before)
      assert.deepEqual(
        seen.filter((id) => original.has(id)),
        before,
        `${sort}: every listing there before shows once, in order`,
      )
      await t.db.execute(sql`delete from properties where created_at > timestamptz '2026-02-01'`)
    }
  })

  it('refuses a cursor of another search, a malformed one, or one with an offset (422 naming cursor)', async () => {
    const first = await page('sort=price_asc&limit=5&city_id=1')
    const cursor = first.next_cursor!
    const base64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
    const { f } = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as { f: string }
    const refused = [
      `sort=price_desc&city_id=1&cursor=${cursor}`,
      `sort=price_asc&cursor=${cursor}`,
      `sort=price_asc&city_id=2&cursor=${cursor}`,
      `sort=price_asc&city_id=1&offset=5&cursor=${cursor}`,
      `cursor=${cursor}`,
      'cursor=abc',
      'cursor=a%2Bb',
      `cursor=${'A'.repeat(401)}`,
      'cursor=',
      `cursor=${base64([1, 2])}`,
      `cursor=${base64('x')}`,
      `sort=price_asc&city_id=1&cursor=${base64({ s: 'price_asc', f, k: [-1, 5] })}`,
      `sort=price_asc&city_id=1&cursor=${base64({ s: 'price_asc', f, k: ['1', 5] })}`,
      `sort=price_asc&city_id=1&cursor=${base64({ s: 'price_asc', f, k: [1e20, 5] })}`,
      `sort=price_asc&city_id=1&cursor=${base64({ s: 'price_asc', f, k: [100, 0] })}`,
      `sort=price_asc&city_id=1&cursor=${base64({ s: 'price_asc', f, k: [100, 2 ** 31] })}`,
      `sort=price_asc&city_id=1&cursor=${base64({ s: 'price_asc', f, k: [100, 5, 6] })}`,
      `sort=price_asc&city_id=1&cursor=${base64({ s: 'price_asc', f, k: [100] })}`,
    ]
    const newest = JSON.parse(Buffer.from((await page('limit=5')).next_cursor!, 'base64url').toString()) as { f: string }
    for (const time of ['2026-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '2026-01-01T25:00:00Z', '2026-01-01 00:00:00', '2026-01-01T00:00:00.1234567Z', 5]) {
      refused.push(`cursor=${base64({ s: 'created_desc', f: newest.f, k: [time, 5] })}`)
    }
    for (const query of refused) {
      const response = await t.app.inject(`/mls/properties?${query}`)
      assert.equal(response.statusCode, 422, `${query}: ${response.body}`)
      const body = response.json<ValidationErrorBody>()
      assert.match(body.detail, /cursor/, query)
    }
    // A hand-made cursor of the right shape is only a position.
    const made = await page(`cursor=${base64({ s: 'created_desc', f: newest.f, k: ['2026-01-01T00:00:00Z', 1] })}`)
    assert.deepEqual(made.items, [])
    assert.equal(made.next_cursor, null)
  })
})
