import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import type { CatalogueDetail } from '../../src/modules/catalogue/catalogue.schemas.js'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { createTenant, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { CataloguePage, ErrorBody } from '../helpers/responses.js'

describe('the public MLS catalogue', () => {
  let t: TestApp
  let agency: Tenant
  let rival: Tenant
  const ids: Record<string, number> = {}

  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app, { company_name: 'Агентство Альфа', email: 'alpha@agency.example', phone: '+7 495 111-22-33' })
    rival = await createTenant(t.app, { company_name: 'Агентство Бета', email: 'beta@agency.example' })
    const owner = { name: 'Секретный Владелец', phone: '+7 916 555-44-33', notes: 'ключи у консьержа' }
    ids.moscowFlat = (
      await submitProperty(t.app, agency, {
        owner,
        price: 12000000,
        location: { city_id: 1, district_id: 9, residential_complex_id: 4, latitude: 55.7577, longitude: 37.6133 },
        attributes: { area: '60', rooms: '2', floor: '3', total_floors: '12' },
      })
    ).id
    ids.moscowRent = (
      await submitProperty(t.app, agency, {
        owner,
        deal_type: 'Долгосрочная аренда',
        price: 90000,
        location: { city_id: 1, district_id: 6 },
        attributes: { area: '40', rooms: '1' },
      })
    ).id
    ids.spbHouse = (
      await submitProperty(t.app, rival, { property_type: 'Дом', price: 25000000, location: { city_id: 2 }, attributes: { area: '180', rooms: '5' } })
    ).id
    ids.spbFlat = (await submitProperty(t.app, rival, { price: 9000000, location: { city_id: 2, district_id: 13 }, attributes: { area: '45', rooms: '1' } })).id
    ids.rejected = (await submitProperty(t.app, agency, { price: null, location: { city_id: 1 } })).id
    await runInternalCheck(t.app)
    ids.waiting = (await submitProperty(t.app, agency, { location: { city_id: 1 } })).id
  })
  after(() => t.close())

  const search = async (query = '') => {
    const response = await t.app.inject(`/mls/properties${query}`)
    assert.equal(response.statusCode, 200, response.body)
    return response.json<CataloguePage>()
  }
  const idsOf = (page: { items: { id: number }[] }) => page.items.map((item) => item.id)

  it('lists only published listings, newest first, as catalogue items, without a key', async () => {
    const page = await search()
    assert.deepEqual(idsOf(page), [ids.spbFlat, ids.spbHouse, ids.moscowRent, ids.moscowFlat])
    assert.equal(page.total, 4)
    assert.equal(page.limit, 50)
    assert.equal(page.offset, 0)
    const flat = page.items.find((item) => item.id === ids.moscowFlat)!
    assert.deepEqual(flat, {
      id: ids.moscowFlat,
      property_type: { id: 1, name: 'Квартира' },
      deal_type: { id: 1, name: 'Продажа' },
      city: { id: 1, name: 'Москва' },
      district: { id: 9, name: 'Северо-Западный административный округ' },
      residential_complex: { id: 4, name: 'Алые Паруса' },
      latitude: 55.7577,
      longitude: 37.6133,
      price: 12000000,
      area: 60,
      rooms: 2,
      floor: 3,
      total_floors: 12,
      thumbnail_url: null,
      created_at: flat.created_at,
    })
    assert.match(flat.created_at, /\+00:00$/)
  })

  it('filters by every search parameter, with exact totals', async () => {
    const cases: [string, number[]][] = [
      ['?city_id=1', [ids.moscowRent!, ids.moscowFlat!]],
      ['?city_id=2&property_type_id=2', [ids.spbHouse!]],
      ['?deal_type_id=2', [ids.moscowRent!]],
      ['?property_type_id=1&deal_type_id=1', [ids.spbFlat!, ids.moscowFlat!]],
      [`?tenant_id=${0}`, []],
      ['?min_price=9000000', [ids.spbFlat!, ids.spbHouse!, ids.moscowFlat!]],
      ['?max_price=9000000', [ids.spbFlat!, ids.moscowRent!]],
      ['?min_price=1000000&max_price=15000000', [ids.spbFlat!, ids.moscowFlat!]],
      ['?district_id=9', [ids.moscowFlat!]],
      ['?residential_complex_id=4', [ids.moscowFlat!]],
      ['?rooms=1', [ids.spbFlat!, ids.moscowRent!]],
      ['?min_area=45&max_area=60', [ids.spbFlat!, ids.moscowFlat!]],
      ['?city_id=3', []],
    ]
    cases[4] = [`?tenant_id=${rival.tenantId}`, [ids.spbFlat!, ids.spbHouse!]]
    for (const [query, expected] of cases) {
      const page = await search(query)
      assert.deepEqual(idsOf(page), expected, query)
      assert.equal(page.total, expected.length, `total for ${query}`)
    }
  })

  it('sorts by price both ways', async () => {
    assert.deepEqual(idsOf(await search('?sort=price_asc')), [ids.moscowRent, ids.spbFlat, ids.moscowFlat, ids.spbHouse])
    assert.deepEqual(idsOf(await search('?sort=price_desc')), [ids.spbHouse, ids.moscowFlat, ids.spbFlat, ids.moscowRent])
    assert.deepEqual(idsOf(await search('?sort=created_desc')), idsOf(await search()))
  })

  it('pages with limit and offset', async () => {
    const first = await search('?limit=3')
    assert.equal(first.items.length, 3)
    assert.equal(first.total, 4)
    const rest = await search('?limit=3&offset=3')
    assert.deepEqual(idsOf(rest), [ids.moscowFlat])
    assert.equal(rest.offset, 3)
    const beyond = await search('?offset=50000')
    assert.deepEqual(beyond.items, [])
    assert.equal(beyond.total, 4)
  })

  for (const query of [
    'limit=0',
    'limit=101',
    'offset=-1',
    'offset=100000000000000000000',
    'city_id=abc',
    'min_price=-1',
    'min_price=10&max_price=5',
    'min_area=50&max_area=10',
    'sort=cheapest',
    'property_type_id=0',
  ]) {
    it(`answers 422 for ${query}`, async () => {
      const response = await t.app.inject(`/mls/properties?${query}`)
      assert.equal(response.statusCode, 422)
      assert.ok(response.json<ErrorBody>().detail)
    })
  }

  it('shows one published listing with description, attributes, images and published_at', async () => {
    const response = await t.app.inject(`/mls/properties/${ids.moscowFlat}`)
    assert.equal(response.statusCode, 200)
    const detail = response.json<CatalogueDetail>()
    assert.equal(detail.id, ids.moscowFlat)
    assert.equal(detail.description, 'Светлая двухкомнатная квартира с видом на парк.')
    assert.deepEqual(detail.attributes, { area: 60, rooms: 2, floor: 3, total_floors: 12 })
    assert.deepEqual(detail.images, [])
    assert.match(detail.published_at, /\+00:00$/)
  })

  it('answers 404 Property not found for unknown, rejected and waiting listings, and ids no listing can have', async () => {
    for (const id of [999999, ids.rejected, ids.waiting, 0, -1, 2147483648]) {
      const response = await t.app.inject(`/mls/properties/${id}`)
      assert.equal(response.statusCode, 404)
      assert.deepEqual(response.json<ErrorBody>(), { detail: 'Property not found' })
    }
    assert.equal((await t.app.inject('/mls/properties/abc')).statusCode, 422)
  })

  it('never shows an owner’s or an agency’s contacts', async () => {
    const bodies = [
      (await t.app.inject('/mls/properties')).body,
      (await t.app.inject(`/mls/properties/${ids.moscowFlat}`)).body,
      (await t.app.inject(`/mls/properties?tenant_id=${agency.tenantId}`)).body,
    ]
    for (const body of bodies) {
      for (const secret of [
        'Секретный',
        'Владелец',
        '916',
        '555-44-33',
        'консьерж',
        'alpha@agency.example',
        'Альфа',
        '495 111',
        'owner',
        'phone',
        'email',
        'notes',
        'tenant',
      ]) {
        assert.ok(!body.includes(secret), `${secret} leaked in ${body.slice(0, 200)}`)
      }
    }
  })

  it('sends an ETag, answers 304 to If-None-Match, and lets caches keep it briefly', async () => {
    const first = await t.app.inject('/mls/properties?city_id=1')
    const tag = first.headers.etag as string
    assert.ok(tag)
    assert.equal(first.headers['cache-control'], 'public, max-age=30')
    const again = await t.app.inject({ url: '/mls/properties?city_id=1', headers: { 'if-none-match': tag } })
    assert.equal(again.statusCode, 304)
    assert.equal(again.body, '')
    assert.equal(again.headers.etag, tag)
    // RFC 9110: any tag of a list, the weak form, or `*` matches; another tag does not.
    for (const header of [`"other", ${tag}`, `W/${tag}`, '*']) {
      const revalidated = await t.app.inject({ url: '/mls/properties?city_id=1', headers: { 'if-none-match': header } })
      assert.equal(revalidated.statusCode, 304, header)
    }
    assert.equal((await t.app.inject({ url: '/mls/properties?city_id=1', headers: { 'if-none-match': '"other"' } })).statusCode, 200)
    // fetch() sends `Cache-Control: no-cache` and `Pragma: no-cache` with every If-None-Match:
    // a directive to caches on the way, not to the origin, which still answers 304.
    const fromFetch = await t.app.inject({
      url: '/mls/properties?city_id=1',
      headers: { 'if-none-match': tag, 'cache-control': 'no-cache', pragma: 'no-cache' },
    })
    assert.equal(fromFetch.statusCode, 304)
    const detail = await t.app.inject(`/mls/properties/${ids.moscowFlat}`)
    assert.ok(detail.headers.etag)
    assert.equal((await t.app.inject({ url: `/mls/properties/${ids.moscowFlat}`, headers: { 'if-none-match': detail.headers.etag } })).statusCode, 304)
    const missing = await t.app.inject({ url: '/mls/properties/999999', headers: { 'if-none-match': '*' } })
    assert.equal(missing.statusCode, 404, 'only a listing that exists is fresh')
  })

  it('shows created_at to the millisecond (cut, not rounded) alike in pages, the detail and the agency’s view', async () => {
    const times: [number, string, string][] = [
      [ids.spbFlat!, '2026-03-04 05:06:07+00', '2026-03-04T05:06:07.000+00:00'],
      [ids.spbHouse!, '2026-03-04 05:06:07.5+00', '2026-03-04T05:06:07.500+00:00'],
      [ids.moscowRent!, '2026-03-04 05:06:07.05+00', '2026-03-04T05:06:07.050+00:00'],
      [ids.moscowFlat!, '2026-03-04 05:06:07.123999+00', '2026-03-04T05:06:07.123+00:00'],
    ]
    for (const [id, stored] of times) await t.db.execute(sql`update properties set created_at = ${stored}::timestamptz where id = ${id}`)
    const page = await search()
    for (const [id, , shown] of times) {
      assert.equal(page.items.find((item) => item.id === id)!.created_at, shown, `page, ${id}`)
      assert.equal((await t.app.inject(`/mls/properties/${id}`)).json<CatalogueDetail>().created_at, shown, `detail, ${id}`)
      const owner = id === ids.spbFlat || id === ids.spbHouse ? rival : agency
      assert.equal((await t.app.inject({ url: `/properties/${id}`, headers: owner.headers })).json<Property>().created_at, shown, `agency, ${id}`)
    }
  })

  it('keeps the trigger-maintained counts exact through withdrawals, deletions and moves', async () => {
    const counted = async (table: 'catalogue_counts' | 'catalogue_counts_by_city' | 'catalogue_counts_by_price' | 'catalogue_counts_by_price_all_cities') =>
      (await queryRows<{ n: number }>(t.db, sql`select coalesce(sum(listings), 0)::int as n from ${sql.identifier(table)}`))[0]!.n
    const actual = async () => (await queryRows<{ n: number }>(t.db, sql`select count(*)::int as n from properties where status_id = 2`))[0]!.n
    const extra = await submitProperty(t.app, rival, { location: { city_id: 3 } })
    await runInternalCheck(t.app)
    assert.equal((await search('?city_id=3')).total, 1)
    await t.app.inject({ method: 'POST', url: `/properties/${extra.id}/status`, headers: rival.headers, payload: { status_id: 4 } })
    assert.equal((await search('?city_id=3')).total, 0)
    await t.app.inject({ method: 'POST', url: `/properties/${extra.id}/status`, headers: rival.headers, payload: { status_id: 1 } })
    await runInternalCheck(t.app)
    await t.app.inject({ method: 'PATCH', url: `/properties/${extra.id}`, headers: rival.headers, payload: { location: { city_id: 4 } } })
    await runInternalCheck(t.app)
    assert.equal((await search('?city_id=3')).total, 0)
    assert.equal((await search('?city_id=4')).total, 1)
    await t.app.inject({ method: 'DELETE', url: `/properties/${extra.id}`, headers: rival.headers })
    assert.equal((await search('?city_id=4')).total, 0)
    assert.equal(await counted('catalogue_counts'), await actual())
    assert.equal(await counted('catalogue_counts_by_city'), await actual())
    // Every published listing here has a price, so each is in one price band.
    assert.equal(await counted('catalogue_counts_by_price'), await actual())
    assert.equal(await counted('catalogue_counts_by_price_all_cities'), await actual())
    // Rooms and district totals come from the detailed counts; a rooms change moves them.
    const flatRooms = (await search('?rooms=2')).total
    await t.app.inject({ method: 'PATCH', url: `/properties/${ids.moscowFlat}`, headers: agency.headers, payload: { attributes: { rooms: '3' } } })
    await runInternalCheck(t.app)
    assert.equal((await search('?rooms=2')).total, flatRooms - 1)
    assert.equal((await search('?rooms=3&city_id=1')).total, 1)
  })
})

describe('deep catalogue pages', () => {
  let t: TestApp
  const LISTINGS = 10_060

  before(async () => {
    t = await buildTestApp()
    const agency = await createTenant(t.app)
    // More published listings than a test can submit one by one, written as the worker would
    // leave them (the n-th one n seconds old and priced 1,000,000 + n), with the counts rebuilt
    // and the change feed written once at the end, as the bench's seed does: row by row, the
    // triggers took 35 s on PGlite. (Without coordinates, the listings are in no map cell.)
    await t.db.transaction(async (tx) => {
      await tx.execute(sql`alter table properties disable trigger properties_catalogue_counts`)
      await tx.execute(sql`alter table properties disable trigger properties_catalogue_changes_insert`)
      await tx.execute(sql`
        insert into properties (tenant_id, status_id, property_type_id, deal_type_id, price, city_id, attributes, published_at, created_at)
        select ${agency.tenantId}, 2, 1, 1, 1000000 + n, 3, '{"area": 50}', now(), now() - n * interval '1 second'
        from generate_series(1, ${LISTINGS}) as n`)
      await tx.execute(sql`alter table properties enable trigger properties_catalogue_counts`)
      await tx.execute(sql`alter table properties enable trigger properties_catalogue_changes_insert`)
      await tx.execute(sql`select catalogue_counts_rebuild()`)
      await tx.execute(sql`insert into catalogue_changes (listing_id, position, op, changed_at)
                           select id, nextval('catalogue_change_positions'), 'upsert', published_at from properties order by id`)
    })
  })
  after(() => t.close())

  it('serves any offset, past 10,000 too, in every order', async () => {
    const lastPrices = Array.from({ length: 10 }, (_, i) => 1_010_051 + i)
    for (const [sort, expected] of [
      ['created_desc', lastPrices],
      ['price_asc', lastPrices],
      ['price_desc', Array.from({ length: 10 }, (_, i) => 1_000_010 - i)],
    ] as const) {
      const response = await t.app.inject(`/mls/properties?city_id=3&sort=${sort}&limit=20&offset=10050`)
      assert.equal(response.statusCode, 200, response.body)
      const page = response.json<CataloguePage>()
      assert.equal(page.total, LISTINGS)
      assert.equal(page.offset, 10050)
      assert.deepEqual(
        page.items.map((item) => item.price),
        expected,
        sort,
      )
    }
  })
})

describe('catalogue rate limit', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_CATALOGUE_PER_MINUTE: '3' })
  })
  after(() => t.close())

  it('counts list and detail requests together per address', async () => {
    const from = (url: string, remoteAddress = '192.0.2.10') => t.app.inject({ url, remoteAddress })
    assert.equal((await from('/mls/properties')).statusCode, 200)
    assert.equal((await from('/mls/properties/1')).statusCode, 404)
    assert.equal((await from('/mls/properties?city_id=1')).statusCode, 200)
    const limited = await from('/mls/properties')
    assert.equal(limited.statusCode, 429)
    assert.ok(limited.headers['retry-after'])
    assert.equal((await from('/mls/properties', '192.0.2.11')).statusCode, 200)
  })

  it('counts an IPv6 client by its /64, which it can take fresh addresses from, and other networks apart', async () => {
    const statuses = []
    for (const host of ['1', '2', '3', 'abcd:1'])
      statuses.push((await t.app.inject({ url: '/mls/properties', remoteAddress: `2001:db8:7:1::${host}` })).statusCode)
    assert.deepEqual(statuses, [200, 200, 200, 429])
    assert.equal((await t.app.inject({ url: '/mls/properties', remoteAddress: '2001:db8:7:2::1' })).statusCode, 200)
  })
})
